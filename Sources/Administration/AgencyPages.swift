import Database
import FastCGI
import Sync
import TidewayJSON
import Web

/// `/agencies` and `/agencies/<key>`: agencies with their counts, their details, menu
/// lists and protected areas. Only global admins create or edit agencies (the policies
/// say so); an agency admin sees and edits the lists and areas of their own agency.
enum AgencyPages {
    static func register(_ router: inout Router) {
        router.get("/agencies", list)
        router.post("/agencies", create)
        router.get("/agencies/:key", show)
        router.post("/agencies/:key", edit)
        router.post("/agencies/:key/menu", MenuListsEditor.save)
        router.post("/agencies/:key/areas", ProtectedAreas.create)
        router.post("/agencies/:key/areas/:id", ProtectedAreas.edit)
        router.post("/agencies/:key/areas/:id/delete", ProtectedAreas.delete)
    }

    struct AgencyRow {
        let key: String
        let href: String
        let name: String
        let active: Bool
        let officers: String
        let reports: String
    }

    struct ListView {
        let chrome: Pages.Chrome
        let csrf: String
        let agencies: [AgencyRow]
        let canCreate: Bool
    }

    static func href(_ key: String) -> String { "/agencies/" + FormData.encode(key) }

    static func list(_ context: RequestContext) throws -> HTTPResponse {
        try WebSession.asUser(context, readOnly: true) { tx, caller in
            try Admin.requireAdmin(caller)
            let rows = try tx.query("""
                select a.key, a.name, a.active,
                       (select count(*) from app.users u where u.agency = a.key and u.role = 'officer' and u.active) as officers,
                       (select count(*) from sync.reports r where r.partition = 'agency=' || a.key and not r.deleted
                           and (r.doc->>'timestamp')::timestamptz > now() - interval '30 days') as reports
                  from app.agencies a
                 where app.is_global_admin() or a.key = app.agency()
                 order by a.name
                """).rows
            return Pages.html(context, "admin/agencies", ListView(
                chrome: Pages.Chrome(title: "Agencies", caller: caller), csrf: caller.csrf,
                agencies: rows.map {
                    AgencyRow(key: $0["key"] ?? "", href: href($0["key"] ?? ""), name: $0["name"] ?? "", active: $0.bool("active") == true,
                              officers: $0["officers"] ?? "0", reports: $0["reports"] ?? "0")
                },
                canCreate: caller.info.isGlobalAdmin))
        }
    }

    struct Details {
        let name: String
        let description: String
        let email: String
        let site: String
        let active: Bool

        init(_ form: [String: String]) throws {
            name = (form["name"] ?? "").trimmingCharacters(in: .whitespaces)
            guard (1...200).contains(name.count) else { throw AppError.invalid("the name needs 1–200 characters") }
            description = String((form["description"] ?? "").prefix(2000))
            email = String((form["email"] ?? "").trimmingCharacters(in: .whitespaces).prefix(254))
            site = String((form["site"] ?? "").trimmingCharacters(in: .whitespaces).prefix(500))
            active = form["active"] == "on" || form["active"] == "true"
        }

        var json: JSON {
            ["name": .string(name), "description": .string(description), "email": .string(email), "site": .string(site), "active": .bool(active)]
        }
    }

    static func create(_ context: RequestContext) throws -> HTTPResponse {
        let form = try WebSession.postedForm(context, limit: 16 * 1024)
        let key = (form["key"] ?? "").trimmingCharacters(in: .whitespaces)
        guard Partition("agency=" + key) != nil else {
            throw AppError.invalid("the key needs 1–64 letters, digits, spaces, '.', '_' or '-'")
        }
        var fields = form
        fields["active"] = "true"
        let details = try Details(fields)
        return try WebSession.asUser(context) { tx, caller in
            try Admin.requireGlobalAdmin(caller)
            _ = try tx.query("""
                insert into app.agencies (key, name, description, email, site)
                values (\(key), \(details.name), \(details.description), \(details.email), \(details.site))
                """)
            try Admin.audit(tx, context, caller, action: "agency.create", target: "agency:\(key)", detail: details.json)
            return Pages.redirect(href(key))
        }
    }

    /// What an agency admin may change of their own agency (0044): the contact details.
    struct Contact {
        let description: String
        let email: String
        let site: String

        init(_ form: [String: String]) {
            description = String((form["description"] ?? "").prefix(2000))
            email = String((form["email"] ?? "").trimmingCharacters(in: .whitespaces).prefix(254))
            site = String((form["site"] ?? "").trimmingCharacters(in: .whitespaces).prefix(500))
        }

        var json: JSON { ["description": .string(description), "email": .string(email), "site": .string(site)] }
    }

    /// A global admin edits everything but the key; an agency admin their own agency's
    /// contact details (anything else in the form is ignored, and the database refuses it).
    static func edit(_ context: RequestContext) throws -> HTTPResponse {
        let key = Admin.pathParameter(context, "key")
        let form = try WebSession.postedForm(context, limit: 16 * 1024)
        return try WebSession.asUser(context) { tx, caller in
            try Admin.requireAgencyRights(caller, agency: key)
            let updated: QueryResult
            let detail: JSON
            if caller.info.isGlobalAdmin {
                let details = try Details(form)
                updated = try tx.query("""
                    update app.agencies set name = \(details.name), description = \(details.description), email = \(details.email),
                           site = \(details.site), active = \(details.active)
                     where key = \(key) returning key
                    """)
                detail = details.json
            } else {
                let contact = Contact(form)
                updated = try tx.query("""
                    update app.agencies set description = \(contact.description), email = \(contact.email), site = \(contact.site)
                     where key = \(key) returning key
                    """)
                detail = contact.json
            }
            guard !updated.isEmpty else { throw AppError.notFound("no such agency") }
            try Admin.audit(tx, context, caller, action: "agency.edit", target: "agency:\(key)", detail: detail)
            return Pages.redirect(href(key) + "?saved=1")
        }
    }

    struct AgencyView {
        let chrome: Pages.Chrome
        let csrf: String
        let key: String
        let href: String
        let name: String
        let description: String
        let email: String
        let site: String
        let active: Bool
        let canEdit: Bool
        /// An agency admin on their own agency: the contact details only.
        let canEditContact: Bool
        let livePartition: String
        let menu: MenuListsEditor.View
        let areas: [ProtectedAreas.AreaView]
        let notice: String?
    }

    static func show(_ context: RequestContext) throws -> HTTPResponse {
        let key = Admin.pathParameter(context, "key")
        return try WebSession.asUser(context, readOnly: true) { tx, caller in
            try Admin.requireAgencyRights(caller, agency: key)
            let partition = Partition.agency(key)
            let (agency, menu, areaRows) = try tx.run(
                Statement.first("select key, name, description, email, site, active from app.agencies where key = \(key)",
                                as: AgencyDetail.self),
                Statement.first("select id, doc::text as doc from sync.menu_data where partition = \(partition) and not deleted order by id limit 1",
                                as: DocumentRow.self),
                Statement.rows("select id, doc::text as doc from sync.mpas where partition = \(partition) and not deleted order by doc->>'name', id",
                               as: DocumentRow.self))
            guard let row = agency else { throw AppError.notFound("no such agency") }
            let menuDoc = try menu.map { try JSON(parsing: $0.doc) }
            let areas = try areaRows.map { try ProtectedAreas.AreaView(id: $0.id, doc: JSON(parsing: $0.doc), agencyHref: href(key)) }
            return Pages.html(context, "admin/agency", AgencyView(
                chrome: Pages.Chrome(title: row.name, caller: caller), csrf: caller.csrf, key: key, href: href(key),
                name: row.name, description: row.description, email: row.email, site: row.site,
                active: row.active, canEdit: caller.info.isGlobalAdmin,
                canEditContact: !caller.info.isGlobalAdmin, livePartition: partition,
                menu: MenuListsEditor.View(menuDoc), areas: areas,
                notice: context.query["saved"] != nil ? "Saved." : nil))
        }
    }
}

extension AgencyPages {
    struct AgencyDetail: RowDecodable {
        let name, description, email, site: String
        let active: Bool

        init(row: Row) throws(DatabaseError) {
            name = try row.decode("name")
            description = try row.decodeIfPresent("description") ?? ""
            email = try row.decodeIfPresent("email") ?? ""
            site = try row.decodeIfPresent("site") ?? ""
            active = try row.decode("active")
        }
    }

    /// A document's id and its JSON text, as the back office reads them to show.
    struct DocumentRow: RowDecodable {
        let id: String
        let doc: String

        init(row: Row) throws(DatabaseError) {
            id = try row.decode("id")
            doc = try row.decode("doc")
        }
    }
}
