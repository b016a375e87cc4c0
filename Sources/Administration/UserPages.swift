import Accounts
import Database
import FastCGI
import Mail
import Sync
import TidewayJSON
import Web

/// `/users` and `/users/<id>`: the people of the caller's agency (all people for a global
/// admin). Row-level security decides who is listed and who may be changed; the filters
/// here only narrow what the policies already allow.
enum UserPages {
    static func register(_ router: inout Router, mailer: Mailer?) {
        router.get("/users", list)
        router.post("/users") { try invite($0, mailer: mailer) }
        router.get("/users/:id", show)
        router.post("/users/:id", edit)
        router.post("/users/:id/active", setActive)
        router.post("/users/:id/reset") { try startReset($0, mailer: mailer) }
    }

    struct Option {
        let value: String
        let label: String
        let selected: Bool
    }

    struct UserRow {
        let id: String
        let email: String
        let name: String
        let role: String
        let agency: String
        let active: Bool
        let lastLogin: String
    }

    struct ListView {
        let chrome: Pages.Chrome
        let csrf: String
        let q: String
        let agencies: [Option]
        let roles: [Option]
        let actives: [Option]
        let users: [UserRow]
        let newRoles: [Option]
        let newAgencies: [Option]
        let isGlobalAdmin: Bool
    }

    static func roleOptions(for caller: PageCaller, selected: String) -> [Option] {
        let roles: [Role] = caller.info.isGlobalAdmin ? [.officer, .agencyAdmin, .globalAdmin] : [.officer, .agencyAdmin]
        return roles.map { Option(value: $0.rawValue, label: $0.label, selected: $0.rawValue == selected) }
    }

    /// The agencies a caller may put people in: all for a global admin, their own otherwise.
    static func agencyOptions(_ tx: Transaction, for caller: PageCaller, selected: String, includeNone: Bool) throws -> [Option] {
        let rows = try tx.query("select key, name from app.agencies order by name").rows
        var options = rows.compactMap { row -> Option? in
            guard let key = row["key"], caller.info.isGlobalAdmin || key == caller.info.agency else { return nil }
            return Option(value: key, label: row["name"] ?? key, selected: key == selected)
        }
        if includeNone { options.insert(Option(value: "", label: "None", selected: selected.isEmpty), at: 0) }
        return options
    }

    static func list(_ context: RequestContext) throws -> HTTPResponse {
        let q = (context.query["q"] ?? "").trimmingCharacters(in: .whitespaces)
        let agency = context.query["agency"] ?? ""
        let role = context.query["role"] ?? ""
        let active = context.query["active"] ?? ""
        return try WebSession.asUser(context, readOnly: true) { tx, caller in
            try Admin.requireAdmin(caller)
            let rows = try tx.query("""
                select id, email, display_name, first_name, last_name, coalesce(agency, '') as agency, role, active,
                       coalesce(to_char(last_login_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI'), 'never') as last_login
                  from app.users
                 where (\(q) = '' or strpos(lower(email), lower(\(q))) > 0
                        or strpos(lower(first_name || ' ' || last_name || ' ' || display_name), lower(\(q))) > 0)
                   and (\(agency) = '' or agency = \(agency))
                   and (\(role) = '' or role = \(role))
                   and (\(active) = '' or active = (\(active) = 'yes'))
                 order by lower(email) limit 500
                """).rows
            let users = rows.map { row in
                UserRow(id: row["id"] ?? "", email: row["email"] ?? "", name: displayName(row),
                        role: Role(rawValue: row["role"] ?? "")?.label ?? "", agency: row["agency"] ?? "",
                        active: row.bool("active") == true, lastLogin: row["last_login"] ?? "")
            }
            let view = ListView(
                chrome: Pages.Chrome(title: "Users", caller: caller), csrf: caller.csrf, q: q,
                agencies: try agencyOptions(tx, for: caller, selected: agency, includeNone: true),
                roles: [Option(value: "", label: "Any role", selected: role.isEmpty)]
                    + [Role.officer, .agencyAdmin, .globalAdmin].map { Option(value: $0.rawValue, label: $0.label, selected: $0.rawValue == role) },
                actives: [("", "Active or not"), ("yes", "Active"), ("no", "Deactivated")].map { Option(value: $0.0, label: $0.1, selected: $0.0 == active) },
                users: users,
                newRoles: roleOptions(for: caller, selected: Role.officer.rawValue),
                newAgencies: try agencyOptions(tx, for: caller, selected: caller.info.agency ?? "", includeNone: caller.info.isGlobalAdmin),
                isGlobalAdmin: caller.info.isGlobalAdmin)
            return Pages.html(context, "admin/users", view)
        }
    }

    static func displayName(_ row: Row) -> String {
        let display = row["display_name"] ?? ""
        if !display.isEmpty { return display }
        return "\(row["first_name"] ?? "") \(row["last_name"] ?? "")".trimmingCharacters(in: .whitespaces)
    }

    /// Creates the user without a password and answers the one-time invitation link.
    static func invite(_ context: RequestContext, mailer: Mailer?) throws -> HTTPResponse {
        let form = try WebSession.postedForm(context, limit: 16 * 1024)
        let email = (form["email"] ?? "").trimmingCharacters(in: .whitespaces)
        // No white space or control characters (CR, LF): an address goes into mail headers.
        guard email.count <= 254, email.split(separator: "@").count == 2,
              !email.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control }) else {
            throw AppError.invalid("enter a valid email address")
        }
        guard let role = Role(rawValue: form["role"] ?? "") else { throw AppError.invalid("choose a role") }
        let agency = (form["agency"] ?? "").isEmpty ? nil : form["agency"]
        let first = String((form["firstName"] ?? "").prefix(100))
        let last = String((form["lastName"] ?? "").prefix(100))
        let (caller, id, link) = try WebSession.asUser(context) { tx, caller in
            try Admin.requireAdmin(caller)
            // The policies refuse these too; saying it here gives a clearer answer.
            if !caller.info.isGlobalAdmin && (role == .globalAdmin || agency != caller.info.agency) {
                throw AppError.forbidden("agency admins add people to their own agency only, never as global admins")
            }
            let id = try Accounts.create(
                .init(email: email, password: nil, firstName: first, lastName: last, agency: agency, role: role), in: tx)
            let link = try AccountLinks.issue(tx, context, for: id, purpose: .invite)
            try Admin.audit(tx, context, caller, action: "user.invite", target: "user:\(id)",
                            detail: ["email": .string(email), "role": .string(role.rawValue), "agency": agency.map(JSON.string) ?? .null])
            return (caller, id, link)
        }
        // After the commit: a mail never announces a user that a rollback took back.
        let mail = AccountMail.sendNow(context, mailer, .invite, userID: id, link: link, email: email, name: "\(first) \(last)")
        return AccountLinks.linkPage(context, caller: caller, link: link, userID: id, email: email, purpose: .invite, mail: mail)
    }

    /// One user as the page shows them.
    struct UserDetail: RowDecodable {
        let email, displayName, firstName, lastName, agency, role, created, lastLogin: String
        let active: Bool

        init(row: Row) throws(DatabaseError) {
            email = try row.decode("email")
            displayName = try row.decode("display_name")
            firstName = try row.decode("first_name")
            lastName = try row.decode("last_name")
            agency = try row.decode("agency")
            role = try row.decode("role")
            active = try row.decode("active")
            created = try row.decode("created")
            lastLogin = try row.decode("last_login")
        }
    }

    struct DeviceRow: RowDecodable {
        let clientID: String
        let appVersion: String
        let firstSeen: String
        let lastPull: String
        let cursorAge: String
        let lastPush: String

        init(row: Row) throws(DatabaseError) {
            clientID = try row.decode("client_id")
            appVersion = try row.decodeIfPresent("app_version") ?? ""
            firstSeen = try row.decode("first_seen")
            lastPull = try row.decode("last_pull")
            cursorAge = CursorAge.text(row)
            lastPush = try row.decode("last_push")
        }
    }

    struct ActivityRow: RowDecodable {
        let at: String
        let actor: String
        let action: String

        init(row: Row) throws(DatabaseError) {
            at = try row.decode("at")
            actor = try row.decodeIfPresent("actor_email") ?? ""
            action = try row.decode("action")
        }
    }

    struct UserView {
        let chrome: Pages.Chrome
        let csrf: String
        let id: String
        let email: String
        let firstName: String
        let lastName: String
        let displayName: String
        let roleLabel: String
        let agency: String
        let active: Bool
        let createdAt: String
        let lastLogin: String
        let isSelf: Bool
        let roles: [Option]
        let agencies: [Option]
        let canPickAgency: Bool
        let devices: [DeviceRow]
        let activity: [ActivityRow]
        let showActivity: Bool
        let notice: String?
    }

    static func userID(_ context: RequestContext) throws -> String {
        let id = context.params["id"] ?? ""
        guard UUIDText.isCanonical(id) else { throw AppError.notFound("no such user") }
        return id
    }

    static func show(_ context: RequestContext) throws -> HTTPResponse {
        let id = try userID(context)
        return try WebSession.asUser(context, readOnly: true) { tx, caller in
            try Admin.requireAdmin(caller)
            let (user, devices, activity) = try tx.run(
                Statement.first("""
                    select id, email, display_name, first_name, last_name, coalesce(agency, '') as agency, role, active,
                           to_char(created_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI') as created,
                           coalesce(to_char(last_login_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI'), 'never') as last_login
                      from app.users where id = \(id)::uuid
                    """, as: UserDetail.self),
                Statement.rows("""
                    select d.client_id, d.app_version, to_char(d.first_seen at time zone 'UTC', 'YYYY-MM-DD HH24:MI') as first_seen,
                           coalesce(to_char(d.last_pull at time zone 'UTC', 'YYYY-MM-DD HH24:MI'), '—') as last_pull,
                           coalesce(to_char(d.last_push at time zone 'UTC', 'YYYY-MM-DD HH24:MI'), '—') as last_push,
                           \(CursorAge.columns)
                      from app.devices d where d.user_id = \(id)::uuid
                     order by greatest(d.last_pull, d.last_push, d.first_seen) desc nulls last limit 50
                    """, as: DeviceRow.self),
                Statement.rows("""
                    select to_char(at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS') as at, actor_email, action
                      from app.audit_log where target = \("user:" + id) or actor = \(id)::uuid order by at desc limit 20
                    """, as: ActivityRow.self))
            guard let user else { throw AppError.notFound("no such user") }
            let view = UserView(
                chrome: Pages.Chrome(title: user.email, caller: caller), csrf: caller.csrf, id: id,
                email: user.email, firstName: user.firstName, lastName: user.lastName,
                displayName: user.displayName, roleLabel: Role(rawValue: user.role)?.label ?? user.role, agency: user.agency,
                active: user.active, createdAt: user.created, lastLogin: user.lastLogin,
                isSelf: id == caller.info.userID, roles: roleOptions(for: caller, selected: user.role),
                agencies: try agencyOptions(tx, for: caller, selected: user.agency, includeNone: caller.info.isGlobalAdmin),
                canPickAgency: caller.info.isGlobalAdmin,
                devices: devices, activity: activity,
                showActivity: caller.info.isGlobalAdmin,
                notice: context.query["saved"] != nil ? "Saved." : nil)
            return Pages.html(context, "admin/user", view)
        }
    }

    /// Name, role and agency. The policies refuse what the caller may not do (another
    /// agency's user, a global admin, raising anyone to global admin); a trigger refuses
    /// changing one's own role or agency.
    static func edit(_ context: RequestContext) throws -> HTTPResponse {
        let id = try userID(context)
        let form = try WebSession.postedForm(context, limit: 16 * 1024)
        let first = String((form["firstName"] ?? "").prefix(100))
        let last = String((form["lastName"] ?? "").prefix(100))
        let display = String((form["displayName"] ?? "").prefix(100))
        let role = try form["role"].map { value -> String in
            guard Role(rawValue: value) != nil else { throw AppError.invalid("unknown role") }
            return value
        }
        let agencyGiven = form["agency"] != nil
        let agency = (form["agency"] ?? "").isEmpty ? nil : form["agency"]
        return try WebSession.asUser(context) { tx, caller in
            try Admin.requireAdmin(caller)
            guard try !tx.query("select 1 from app.users where id = \(id)::uuid").isEmpty else { throw AppError.notFound("no such user") }
            if !caller.info.isGlobalAdmin && role == Role.globalAdmin.rawValue {
                throw AppError.forbidden("only global admins make global admins")
            }
            let updated = try tx.query("""
                update app.users set first_name = \(first), last_name = \(last), display_name = \(display),
                       role = coalesce(\(role), role),
                       agency = case when \(agencyGiven) then \(agency) else agency end
                 where id = \(id)::uuid returning id
                """)
            guard !updated.isEmpty else { throw AppError.forbidden("you may not change this user") }
            try Admin.audit(tx, context, caller, action: "user.edit", target: "user:\(id)", detail: [
                "firstName": .string(first), "lastName": .string(last), "displayName": .string(display),
                "role": role.map(JSON.string) ?? .null, "agency": agencyGiven ? (agency.map(JSON.string) ?? .null) : "(unchanged)",
            ])
            return Pages.redirect("/users/\(id)?saved=1")
        }
    }

    /// Deactivation ends every login of the user at once (a trigger); reactivation lets
    /// them sign in again with their password.
    static func setActive(_ context: RequestContext) throws -> HTTPResponse {
        let id = try userID(context)
        let form = try WebSession.postedForm(context, limit: 4 * 1024)
        guard let value = form["active"], value == "true" || value == "false" else { throw AppError.invalid("active must be true or false") }
        return try WebSession.asUser(context) { tx, caller in
            try Admin.requireAdmin(caller)
            guard id != caller.info.userID else { throw AppError.invalid("you cannot deactivate yourself") }
            guard try !tx.query("select 1 from app.users where id = \(id)::uuid").isEmpty else { throw AppError.notFound("no such user") }
            let updated = try tx.query("update app.users set active = \(value == "true") where id = \(id)::uuid returning id")
            guard !updated.isEmpty else { throw AppError.forbidden("you may not change this user") }
            try Admin.audit(tx, context, caller, action: value == "true" ? "user.reactivate" : "user.deactivate", target: "user:\(id)")
            return Pages.redirect("/users/\(id)?saved=1")
        }
    }

    static func startReset(_ context: RequestContext, mailer: Mailer?) throws -> HTTPResponse {
        let id = try userID(context)
        _ = try WebSession.postedForm(context, limit: 4 * 1024)
        let (caller, row, link) = try WebSession.asUser(context) { tx, caller in
            try Admin.requireAdmin(caller)
            guard let row = try tx.query("select email, display_name, first_name, last_name from app.users where id = \(id)::uuid").first else {
                throw AppError.notFound("no such user")
            }
            let link = try AccountLinks.issue(tx, context, for: id, purpose: .reset)
            try Admin.audit(tx, context, caller, action: "user.reset_link", target: "user:\(id)")
            return (caller, row, link)
        }
        let email = row["email"] ?? ""
        let mail = AccountMail.sendNow(context, mailer, .resetByAdmin, userID: id, link: link, email: email, name: displayName(row))
        return AccountLinks.linkPage(context, caller: caller, link: link, userID: id, email: email, purpose: .reset, mail: mail)
    }
}
