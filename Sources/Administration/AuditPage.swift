import FastCGI
import Web

/// `/audit`: the admin actions, newest first, for global admins (the policy hides the
/// table from everyone else, so an agency admin would see an empty list; they get 403).
enum AuditPage {
    static func register(_ router: inout Router) {
        router.get("/audit", show)
    }

    struct EntryRow {
        let at: String
        let actor: String
        let action: String
        let target: String
        let detail: String
        let address: String
    }

    struct View {
        let chrome: Pages.Chrome
        let q: String
        let entries: [EntryRow]
    }

    static func show(_ context: RequestContext) throws -> HTTPResponse {
        let q = (context.query["q"] ?? "").trimmingCharacters(in: .whitespaces)
        return try WebSession.asUser(context, readOnly: true) { tx, caller in
            try Admin.requireGlobalAdmin(caller)
            let rows = try tx.query("""
                select to_char(at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS') as at, actor_email, action, target,
                       detail::text as detail, address
                  from app.audit_log
                 where \(q) = '' or strpos(lower(action || ' ' || target || ' ' || actor_email), lower(\(q))) > 0
                 order by id desc limit 300
                """).rows
            return Pages.html(context, "admin/audit", View(
                chrome: Pages.Chrome(title: "Audit log", caller: caller), q: q,
                entries: rows.map {
                    EntryRow(at: $0["at"] ?? "", actor: $0["actor_email"] ?? "", action: $0["action"] ?? "", target: $0["target"] ?? "",
                             detail: String(($0["detail"] ?? "").prefix(300)), address: $0["address"] ?? "")
                }))
        }
    }
}
