import Database
import FastCGI
import Web

/// `/sync`: the devices that sync (per device: user, first seen, last pull and push, cursor
/// age, rejections of the last 7 days), recent rejected changes with their reasons, and "why
/// can't this user see document X". Agency admins see their own agency's users only
/// (row-level security); the explanation comes from app.explain_access.
enum SyncInspector {
    static func register(_ router: inout Router) {
        router.get("/sync", show)
    }

    struct DeviceRow: RowDecodable {
        let userID: String
        let email: String
        let clientID: String
        let appVersion: String
        let firstSeen: String
        let lastPull: String
        let pullAge: String
        let cursorAge: String
        let lastPush: String
        let rejections: String

        init(row: Row) throws(DatabaseError) {
            userID = try row.decode("user_id")
            email = try row.decode("email")
            clientID = try row.decode("client_id")
            appVersion = try row.decodeIfPresent("app_version") ?? ""
            firstSeen = try row.decode("first_seen")
            lastPull = try row.decode("last_pull")
            pullAge = try row.decode("pull_age")
            cursorAge = CursorAge.text(row)
            lastPush = try row.decode("last_push")
            rejections = try row.decode("rejections")
        }
    }

    struct RejectionRow: RowDecodable {
        let at: String
        let email: String
        let clientID: String
        let changeID: String
        let code: String
        let message: String

        init(row: Row) throws(DatabaseError) {
            at = try row.decode("at")
            email = try row.decode("email")
            clientID = try row.decode("client_id")
            changeID = try row.decode("change_id")
            code = try row.decodeIfPresent("code") ?? ""
            message = try row.decodeIfPresent("message") ?? ""
        }
    }

    struct AnswerRow: RowDecodable {
        let collection: String
        let partition: String
        let readable: Bool
        let rule: String

        init(row: Row) throws(DatabaseError) {
            collection = try row.decode("collection")
            partition = try row.decode("partition")
            readable = try row.decodeIfPresent("readable") ?? false
            rule = try row.decodeIfPresent("rule") ?? ""
        }
    }

    struct View {
        let chrome: Pages.Chrome
        let devices: [DeviceRow]
        let rejections: [RejectionRow]
        let askedUser: String
        let askedDoc: String
        let asked: Bool
        let answers: [AnswerRow]
        let problem: String?
        /// Where this worker process's pulls were answered (issue 19's replica reads).
        let reads: String
    }

    static func readsText(_ replica: ReplicaReads?) -> String {
        guard let figures = replica?.figures else {
            return "No replica is configured: the primary answers every pull."
        }
        return "This worker process answered \(figures.servedByReplica) pulls from the replica, "
            + "\(figures.lagging) from the primary because the replica lagged, \(figures.unavailable) because it failed or "
            + "was unreachable. At the last pull that asked, the replica was \(Int(figures.behindBytes)) bytes of WAL behind."
    }

    static func show(_ context: RequestContext) throws -> HTTPResponse {
        let askedUser = (context.query["user"] ?? "").trimmingCharacters(in: .whitespaces)
        let askedDoc = String((context.query["doc"] ?? "").trimmingCharacters(in: .whitespaces).prefix(128))
        return try WebSession.asUser(context, readOnly: true) { tx, caller in
            try Admin.requireAdmin(caller)
            let (devices, rejections) = try tx.run(
                Statement.rows("""
                select d.user_id::text as user_id, u.email, d.client_id, d.app_version,
                       to_char(d.first_seen at time zone 'UTC', 'YYYY-MM-DD HH24:MI') as first_seen,
                       coalesce(to_char(d.last_pull at time zone 'UTC', 'YYYY-MM-DD HH24:MI'), '—') as last_pull,
                       coalesce(justify_interval(date_trunc('minute', now() - d.last_pull))::text, '—') as pull_age,
                       coalesce(to_char(d.last_push at time zone 'UTC', 'YYYY-MM-DD HH24:MI'), '—') as last_push,
                       \(CursorAge.columns),
                       (select count(*) from app.push_log l where l.user_id = d.user_id and l.client_id = d.client_id
                           and l.result->>'status' = 'rejected' and l.at > now() - interval '7 days') as rejections
                  from app.devices d join app.users u on u.id = d.user_id
                 order by greatest(d.last_pull, d.last_push, d.first_seen) desc nulls last limit 200
                """, as: DeviceRow.self),
                // The newest 100 refusals taken before the join: joined first, the planner, which
                // cannot know how many users the admin policy lets through, often looped over the
                // users and read refusals for each (up to 600 ms at 1,000,000 log entries and 541
                // users, docs/performance/round-21.md, "The sync inspector's device list"). Every
                // refusal an admin may read is of a user they may read (the two policies' same
                // rule), so the rows are the same.
                Statement.rows("""
                select to_char(l.at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS') as at, u.email, l.client_id, l.change_id,
                       l.result->'error'->>'code' as code, l.result->'error'->>'message' as message
                  from (select * from app.push_log where result->>'status' = 'rejected' order by at desc limit 100) l
                  join app.users u on u.id = l.user_id
                 order by l.at desc
                """, as: RejectionRow.self))
            var answers: [AnswerRow] = []
            var problem: String?
            let asked = !askedUser.isEmpty && !askedDoc.isEmpty
            if asked {
                let target = try tx.query("select id::text as id from app.users where lower(email) = lower(\(askedUser)) or id::text = \(askedUser)").first?["id"]
                if let target, target != caller.info.userID || caller.info.isGlobalAdmin {
                    answers = try tx.query("select * from app.explain_access(\(target)::uuid, \(askedDoc))").decode(AnswerRow.self)
                    if answers.isEmpty { problem = "No document with that id in a partition you may read." }
                } else {
                    problem = "No such user among the people you manage."
                }
            }
            return Pages.html(context, "admin/sync", View(
                chrome: Pages.Chrome(title: "Sync inspector", caller: caller),
                devices: devices, rejections: rejections,
                askedUser: askedUser, askedDoc: askedDoc, asked: asked, answers: answers, problem: problem,
                reads: readsText(context.app.replica)))
        }
    }
}
