import Database
import Drawing
import FastCGI
import Foundation
import Sync
import TidewayJSON
import Web

/// `/teams` and `/teams/<id>` (issue 17): the teams the caller may see, a team's members
/// and their rights, its tasks, and the forms of its managers (rename, archive, grant,
/// revoke) and of its agency's admins (assign a task). Every rule is the database's:
/// the pages call the same functions as the API (app.create_team, app.update_team,
/// app.set_grant, app.revoke_grant), which also write the audit log.
enum TeamPages {
    static func register(_ router: inout Router) {
        router.get("/teams", list)
        router.post("/teams", create)
        router.get("/teams/:id", show)
        router.post("/teams/:id", update)
        router.post("/teams/:id/grants", grant)
        router.post("/teams/:id/grants/revoke", revoke)
        router.post("/teams/:id/tasks", assign)
    }

    struct TeamRow: RowDecodable {
        let id, name, agency, right: String
        let archived: Bool
        let members, tasks: Int
        var href: String { "/teams/" + id }

        init(row: Row) throws(DatabaseError) {
            id = try row.decode("id")
            name = try row.decode("name")
            agency = try row.decode("agency")
            archived = try row.decode("archived")
            right = try row.decode("right")
            members = try row.decode("members")
            tasks = try row.decode("tasks")
        }
    }

    struct Option { let value, label: String; let selected: Bool }

    struct AgencyRow: RowDecodable {
        let key, name: String
        init(row: Row) throws(DatabaseError) {
            key = try row.decode("key")
            name = try row.decode("name")
        }
    }

    struct ListView {
        let chrome: Pages.Chrome
        let csrf: String
        let teams: [TeamRow]
        let canCreate: Bool
        let agencies: [Option]
    }

    static let rightNames = "case r when 3 then 'manage' when 2 then 'write' when 1 then 'read' else '—' end"

    static func list(_ context: RequestContext) throws -> HTTPResponse {
        try WebSession.asUser(context, readOnly: true) { tx, caller in
            let (teams, agencies) = try tx.run(
                Statement.rows("""
                    select t.id::text as id, t.name, t.agency, t.archived, \(unsafeSQL: rightNames) as right,
                           (select count(*) from app.grants g where g.partition = 'team=' || t.id)::int as members,
                           (select count(*) from sync.tasks k where k.partition = 'team=' || t.id and not k.deleted)::int as tasks
                      from app.teams t cross join lateral (select app.team_right('team=' || t.id) as r) rights
                     order by t.archived, t.agency, t.name, t.id
                     limit 500
                    """, as: TeamRow.self),
                Statement.rows("""
                    select key, name from app.agencies
                     where active and (app.is_global_admin() or (app.role() = 'agencyAdmin' and key = app.agency()))
                     order by name
                    """, as: AgencyRow.self))
            return Pages.html(context, "teams/list", ListView(
                chrome: Pages.Chrome(title: "Teams", caller: caller), csrf: caller.csrf, teams: teams,
                canCreate: caller.info.isAdmin && !agencies.isEmpty,
                agencies: agencies.map { Option(value: $0.key, label: $0.name, selected: $0.key == caller.info.agency) }))
        }
    }

    struct Created: RowDecodable {
        let id: String
        init(row: Row) throws(DatabaseError) { id = try row.decode("id") }
    }

    static func create(_ context: RequestContext) throws -> HTTPResponse {
        let form = try WebSession.postedForm(context, limit: 16 * 1024)
        let name = (form["name"] ?? "").trimmingCharacters(in: .whitespaces)
        guard (1...200).contains(name.count) else { throw AppError.invalid("the name needs 1–200 characters") }
        let agency = form["agency"] ?? ""
        let description = String((form["description"] ?? "").prefix(2000))
        return try WebSession.asUser(context) { tx, _ in
            let created = try tx.run(Statement.first(
                "select app.create_team(\(agency), \(name), \(description))::text as id", as: Created.self), thenCommit: false)
            guard let created else { throw AppError(.internal, "no team created") }
            return Pages.redirect("/teams/" + created.id)
        }
    }

    /// The team of the path, as a partition; 404 for anything that is not a team id.
    static func partition(_ context: RequestContext) throws -> String {
        let id = context.params["id"] ?? ""
        guard let partition = Partition("team=" + id), partition.kind == .team else { throw AppError.notFound("no such team") }
        return partition.description
    }

    struct Detail: RowDecodable {
        let id, name, agency, description, created: String
        let archived: Bool
        let right: Int
        let assigns: Bool

        init(row: Row) throws(DatabaseError) {
            id = try row.decode("id")
            name = try row.decode("name")
            agency = try row.decode("agency")
            description = try row.decode("description")
            created = try row.decode("created")
            archived = try row.decode("archived")
            right = try row.decode("r")
            assigns = try row.decode("assigns")
        }
    }

    struct Member: RowDecodable {
        let kind, grantee, right, who, grantedAt: String
        var isManager: Bool { right == "manage" }

        init(row: Row) throws(DatabaseError) {
            kind = try row.decode("grantee_kind")
            grantee = try row.decode("grantee")
            right = try row.decode("right")
            grantedAt = try row.decode("granted_at")
            switch kind {
            case "user":
                let email: String? = try row.decodeIfPresent("email")
                let name: String? = try row.decodeIfPresent("display_name")
                who = [name, email.map { "<\($0)>" }].compactMap { $0 }.joined(separator: " ")
            case "agency": who = "everyone of agency " + grantee
            default: who = "everyone signed in"
            }
        }
    }

    struct Task: RowDecodable {
        let id, title, status, due, assignee, origin, mpa: String
        let lon, lat: Double?
        /// The row's fragment id, which the map's dots link to.
        let anchor: String

        init(row: Row) throws(DatabaseError) {
            id = try row.decode("id")
            title = try row.decode("title")
            status = try row.decode("status")
            due = try row.decode("due")
            assignee = try row.decode("assignee")
            origin = try row.decode("origin")
            mpa = try row.decode("mpa")
            lon = try row.decodeIfPresent("lon")
            lat = try row.decodeIfPresent("lat")
            anchor = "task-" + (id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        }
    }

    struct Entry: RowDecodable {
        let at, actor, action, detail: String
        init(row: Row) throws(DatabaseError) {
            at = try row.decode("at")
            actor = try row.decode("actor_email")
            action = try row.decode("action")
            detail = try row.decode("detail")
        }
    }

    struct TeamView {
        let chrome: Pages.Chrome
        let csrf: String
        let href: String
        let id: String
        let partition: String
        let name: String
        let agency: String
        let description: String
        let created: String
        let archived: Bool
        let right: String
        let manages: Bool
        let assigns: Bool
        let members: [Member]
        let tasks: [Task]
        let map: Figure
        let statuses: [Option]
        let rights: [Option]
        let showAudit: Bool
        let audit: [Entry]
        let notice: String?
    }

    static func show(_ context: RequestContext) throws -> HTTPResponse {
        let p = try partition(context)
        return try WebSession.asUser(context, readOnly: true) { tx, caller in
            let (team, members, tasks, areas, audit) = try tx.run(
                Statement.first("""
                    select t.id::text as id, t.name, t.agency, t.description, t.archived, app.team_right(\(p)) as r,
                           to_char(t.created_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI') as created,
                           (not t.archived and app.can_write('agency=' || t.agency, 'agencyTasks')) as assigns
                      from app.teams t where 'team=' || t.id = \(p)
                    """, as: Detail.self),
                Statement.rows("""
                    select grantee_kind, grantee, "right", email, display_name,
                           to_char(granted_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI') as granted_at
                      from app.team_grants(\(p))
                    """, as: Member.self),
                Statement.rows("""
                    select id, coalesce(doc->>'title', '') as title, coalesce(doc->>'status', '') as status,
                           coalesce(left(doc->>'dueDate', 10), '') as due, coalesce(doc->>'assignee', '') as assignee,
                           coalesce(doc #>> '{assignment,agency}', '') as origin, coalesce(doc->>'mpa', '') as mpa,
                           case when jsonb_typeof(doc #> '{position,0}') = 'number' then (doc #>> '{position,0}')::float8 end as lon, case when jsonb_typeof(doc #> '{position,1}') = 'number' then (doc #>> '{position,1}')::float8 end as lat
                      from sync.tasks where partition = \(p) and not deleted
                     order by case doc->>'status' when 'open' then 0 when 'in progress' then 1 else 2 end, doc->>'dueDate', id
                     limit 500
                    """, as: Task.self),
                Statement.rows(TaskMap.areasQuery(team: p)),
                Statement.rows("""
                    select to_char(at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS') as at, actor_email, action, detail::text as detail
                      from app.audit_log where target = \(p) order by at desc limit 50
                    """, as: Entry.self))
            guard let team, team.right > 0 || caller.info.agency == team.agency else { throw AppError.notFound("no such team") }
            let rightName = ["—", "read", "write", "manage"][max(0, min(team.right, 3))]
            return Pages.html(context, "teams/team", TeamView(
                chrome: Pages.Chrome(title: team.name, caller: caller), csrf: caller.csrf, href: "/teams/" + team.id,
                id: team.id, partition: p, name: team.name, agency: team.agency, description: team.description,
                created: team.created, archived: team.archived, right: rightName, manages: team.right >= 3,
                assigns: team.assigns, members: members, tasks: tasks,
                map: TaskMap.figure(tasks: tasks, areas: MapArea.protectedAreas(areas), home: context.app.config.home),
                statuses: ["open", "in progress", "done"].map { Option(value: $0, label: $0, selected: $0 == "open") },
                rights: ["read", "write", "manage"].map { Option(value: $0, label: $0, selected: $0 == "read") },
                showAudit: caller.info.isGlobalAdmin, audit: audit,
                notice: context.query["saved"] != nil ? "Saved." : nil))
        }
    }

    static func update(_ context: RequestContext) throws -> HTTPResponse {
        let p = try partition(context)
        let form = try WebSession.postedForm(context, limit: 16 * 1024)
        let name = form["name"].map { $0.trimmingCharacters(in: .whitespaces) }
        let description = form["description"].map { String($0.prefix(2000)) }
        let archived: Bool? = switch form["archived"] { case "true"?: true; case "false"?: false; default: nil }
        return try WebSession.asUser(context) { tx, _ in
            try tx.run(Statement.effect("select app.update_team(\(p), \(name), \(description), \(archived))"), thenCommit: false)
            return Pages.redirect("/teams/" + p.dropFirst(5) + "?saved=1")
        }
    }

    /// The grantee a form names: a user by email, an agency by key, or everyone.
    static func grantee(_ form: [String: String], partition p: String, tx: Transaction) throws -> (String, String) {
        switch form["kind"] {
        case "user"?:
            struct Found: RowDecodable {
                let id: String?
                init(row: Row) throws(DatabaseError) { id = try row.decodeIfPresent("id") }
            }
            let email = (form["who"] ?? "").trimmingCharacters(in: .whitespaces)
            let found = try tx.run(Statement.first("select app.user_for_grant(\(p), \(email))::text as id", as: Found.self),
                                   thenCommit: false)
            guard let id = found?.id else { throw AppError.notFound("no active user with that email") }
            return ("user", id)
        case "agency"?: return ("agency", (form["who"] ?? "").trimmingCharacters(in: .whitespaces))
        case "everyone"?: return ("everyone", "")
        default: throw AppError.invalid("a grantee is a user, an agency or everyone")
        }
    }

    static func grant(_ context: RequestContext) throws -> HTTPResponse {
        let p = try partition(context)
        let form = try WebSession.postedForm(context, limit: 16 * 1024)
        let right = form["right"] ?? ""
        return try WebSession.asUser(context) { tx, _ in
            let (kind, who) = try grantee(form, partition: p, tx: tx)
            try tx.run(Statement.effect("select app.set_grant(\(p), \(kind), \(who), \(right))"), thenCommit: false)
            return Pages.redirect("/teams/" + p.dropFirst(5) + "?saved=1")
        }
    }

    static func revoke(_ context: RequestContext) throws -> HTTPResponse {
        let p = try partition(context)
        let form = try WebSession.postedForm(context, limit: 16 * 1024)
        let kind = form["kind"] ?? ""
        let who = form["grantee"] ?? ""
        return try WebSession.asUser(context) { tx, _ in
            try tx.run(Statement.effect("select app.revoke_grant(\(p), \(kind), \(who))"), thenCommit: false)
            return Pages.redirect("/teams/" + p.dropFirst(5) + "?saved=1")
        }
    }

    /// A new task of the team's agency assigned to this team: an `agencyTasks` document
    /// written through the write path, which the database copies into the team.
    static func assign(_ context: RequestContext) throws -> HTTPResponse {
        let p = try partition(context)
        let form = try WebSession.postedForm(context, limit: 64 * 1024)
        let title = (form["title"] ?? "").trimmingCharacters(in: .whitespaces)
        guard (1...200).contains(title.count) else { throw AppError.invalid("a task needs a title of 1–200 characters") }
        var doc: JSONObject = ["title": .string(title), "status": "open", "team": .string(String(p.dropFirst(5)))]
        if let text = form["description"], !text.isEmpty { doc["description"] = .string(String(text.prefix(4000))) }
        if let area = form["mpa"], !area.isEmpty { doc["mpa"] = .string(String(area.prefix(200))) }
        if let due = form["dueDate"], !due.isEmpty {
            guard due.count == 10, due.allSatisfy({ $0.isNumber || $0 == "-" }) else { throw AppError.invalid("due date: YYYY-MM-DD") }
            doc["dueDate"] = .string(due + "T00:00:00Z")
        }
        if let lon = form["lon"].flatMap(Double.init), let lat = form["lat"].flatMap(Double.init) {
            doc["position"] = [.double(lon), .double(lat)]
        }
        return try WebSession.asUser(context) { tx, caller in
            struct Owner: RowDecodable {
                let agency: String
                init(row: Row) throws(DatabaseError) { agency = try row.decode("agency") }
            }
            guard let owner = try tx.run(Statement.first("select agency from app.teams where 'team=' || id = \(p)", as: Owner.self),
                                         thenCommit: false)
            else { throw AppError.notFound("no such team") }
            guard let agency = Partition("agency=" + owner.agency) else { throw AppError.notFound("no such agency") }
            let id = UUID().uuidString.lowercased()
            doc["_id"] = .string(id)
            let change = Change(changeID: "team-page-" + id, collection: .agencyTasks, partition: agency,
                                id: id, op: .insert, body: .object(doc))
            let results = try WritePath.apply([.success(change)], clientID: nil, caller: caller.info, in: tx,
                                              limits: .init(documentBytes: context.app.config.limits.documentBytes))
            guard let result = results.first else { throw AppError(.internal, "no result from the write path") }
            if result["status"]?.stringValue != "applied" {
                let code = result["error"]?["code"]?.stringValue.flatMap(AppError.Code.init(rawValue:)) ?? .invalid
                throw AppError(code, result["error"]?["message"]?.stringValue ?? "the task was refused")
            }
            return Pages.redirect("/teams/" + p.dropFirst(5) + "?saved=1")
        }
    }
}
