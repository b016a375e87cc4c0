import Database
import FastCGI
import Sync
import TidewayJSON
import Web

/// `/api/v1/grants` and `/api/v1/me/grants` (sync-protocol.md, "Teams and grants"): who
/// holds which right on a team partition. Every rule is the database's: `app.set_grant`
/// and `app.revoke_grant` (Migrations/repeatable/0060) refuse non-managers, rights above
/// manage and removing the last manager; the policies of app.grants decide what is seen.
package enum GrantRoutes {
    package static func register(_ router: inout Router) {
        router.get("/api/v1/grants", list)
        router.put("/api/v1/grants", put)
        router.add("DELETE", "/api/v1/grants", delete)
        router.get("/api/v1/me/grants", mine)
    }

    /// One grant as the API shows it.
    struct GrantRow: RowDecodable {
        let partition, kind, grantee, right, grantedAt: String
        let email, displayName: String?

        init(row: Row) throws(DatabaseError) {
            partition = try row.decode("partition")
            kind = try row.decode("grantee_kind")
            grantee = try row.decode("grantee")
            right = try row.decode("right")
            grantedAt = try row.decode("granted_at")
            email = try row.decodeIfPresent("email")
            displayName = try row.decodeIfPresent("display_name")
        }

        var json: JSON {
            var who: JSONObject = ["kind": .string(kind)]
            switch kind {
            case "user":
                who["id"] = .string(grantee)
                if let email { who["email"] = .string(email) }
                if let displayName { who["displayName"] = .string(displayName) }
            case "agency": who["agency"] = .string(grantee)
            default: break
            }
            return ["partition": .string(partition), "grantee": .object(who), "right": .string(right),
                    "grantedAt": .string(grantedAt)]
        }
    }

    struct RightRow: RowDecodable {
        let right: Int
        init(row: Row) throws(DatabaseError) { right = try row.decode("r") }
    }

    /// A team partition named by the query or body, or the contract's error.
    static func teamPartition(_ text: String?) throws -> String {
        guard let text else { throw AppError.badRequest("partition is required") }
        guard let partition = Partition(text) else { throw AppError.invalid("not a partition: \(text)") }
        guard partition.kind == .team else { throw AppError.invalid("only team partitions have grants") }
        return partition.description
    }

    static func grantsSQL(of partition: String) -> SQL {
        """
        select g.partition, g.grantee_kind, g.grantee, g."right",
               to_char(g.granted_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as granted_at, g.email, g.display_name
          from app.team_grants(\(partition)) g
        """
    }

    /// `GET /api/v1/grants?partition=team=<id>`: every grant of the team, for its managers.
    static func list(_ context: RequestContext) throws -> HTTPResponse {
        let partition = try teamPartition(context.query["partition"])
        let (right, grants) = try context.withAPIClaims(readOnly: true) { tx in
            try tx.run(Statement.first("select app.team_right(\(partition)) as r", as: RightRow.self),
                       Statement.rows(grantsSQL(of: partition), as: GrantRow.self))
        }
        switch right?.right ?? 0 {
        case 0: throw AppError.notFound("no such team")
        case 1, 2: throw AppError.forbidden("only the team's managers see its grants")
        default: return .json(["partition": .string(partition), "grants": .array(grants.map(\.json))],
                              headers: [("Cache-Control", "no-store")])
        }
    }

    /// The grantee of a body or query: kind and, for a user or an agency, who.
    static func grantee(kind: JSON?, id: JSON?) throws -> (String, String) {
        guard let kind = kind?.stringValue, ["user", "everyone", "agency"].contains(kind) else {
            throw AppError.invalid("grantee.kind must be user, everyone or agency", path: "/grantee/kind")
        }
        switch (kind, id) {
        case ("everyone", nil), ("everyone", .null?): return (kind, "")
        case ("everyone", _): throw AppError.invalid("a grant to everyone names nobody", path: "/grantee/id")
        case (_, .string(let who)?) where !who.isEmpty && who.utf8.count <= 64: return (kind, who)
        default: throw AppError.invalid("grantee.id must name the \(kind)", path: "/grantee/id")
        }
    }

    /// `PUT /api/v1/grants` `{"partition", "grantee": {"kind", "id"?}, "right"}`: gives or
    /// changes one grantee's right. Managers only.
    static func put(_ context: RequestContext) throws -> HTTPResponse {
        let body = try context.jsonObject(allowing: ["partition", "grantee", "right"])
        guard case .string(let text)? = body["partition"] else { throw AppError.badRequest("partition must be a string") }
        let partition = try teamPartition(text)
        guard case .object(let who)? = body["grantee"] else { throw AppError.badRequest("grantee must be an object") }
        if let unknown = who.keys.first(where: { $0 != "kind" && $0 != "id" }) {
            throw AppError.badRequest("unknown field 'grantee.\(unknown)'")
        }
        let (kind, id) = try grantee(kind: who["kind"], id: who["id"])
        guard let right = body["right"]?.stringValue, ["read", "write", "manage"].contains(right) else {
            throw AppError.invalid("right must be read, write or manage: nothing above manage", path: "/right")
        }
        let grant = try context.withAPIClaims { tx in
            try tx.run(Statement.effect("select app.set_grant(\(partition), \(kind), \(id), \(right))"),
                       Statement.first("""
                           \(grantsSQL(of: partition)) where g.grantee_kind = \(kind) and g.grantee = \(id)
                           """, as: GrantRow.self)).1
        }
        guard let grant else { throw AppError(.internal, "the grant was not stored") }
        return .json(["grant": grant.json], headers: [("Cache-Control", "no-store")])
    }

    /// `DELETE /api/v1/grants?partition=…&kind=user&id=…`: takes a grant away. 204, or 404
    /// when there was none.
    static func delete(_ context: RequestContext) throws -> HTTPResponse {
        let partition = try teamPartition(context.query["partition"])
        let (kind, id) = try grantee(kind: context.query["kind"].map(JSON.string), id: context.query["id"].map(JSON.string))
        struct Revoked: RowDecodable {
            let done: Bool
            init(row: Row) throws(DatabaseError) { done = try row.decode("done") }
        }
        let revoked = try context.withAPIClaims { tx in
            try tx.run(Statement.first("select app.revoke_grant(\(partition), \(kind), \(id)) as done", as: Revoked.self),
                       thenCommit: true)
        }
        guard revoked?.done == true else { throw AppError.notFound("no such grant") }
        return HTTPResponse(status: 204, headers: [("Cache-Control", "no-store")])
    }

    struct MyGrant: RowDecodable {
        let partition, name, agency, right: String
        let archived: Bool
        let via: [String]

        init(row: Row) throws(DatabaseError) {
            partition = try row.decode("partition")
            name = try row.decode("team_name")
            agency = try row.decode("team_agency")
            archived = try row.decode("archived")
            right = try row.decode("right")
            via = try row.decode("via", as: String.self).split(separator: ",").map(String.init)
        }
    }

    /// `GET /api/v1/me/grants`: the caller's right on every team partition they may open,
    /// with where it comes from (`user`, `everyone`, `agency`, or a role).
    static func mine(_ context: RequestContext) throws -> HTTPResponse {
        let rows = try context.withAPIClaims(readOnly: true) { tx in
            try tx.run(Statement.rows("""
                select partition, team_name, team_agency, archived, "right", array_to_string(via, ',') as via
                  from app.my_grants()
                """, as: MyGrant.self), thenCommit: true)
        }
        let list = rows.map { row -> JSON in
            ["partition": .string(row.partition), "right": .string(row.right), "via": .array(row.via.map(JSON.string)),
             "team": ["name": .string(row.name), "agency": .string(row.agency), "archived": .bool(row.archived)]]
        }
        return .json(["grants": .array(list)], headers: [("Cache-Control", "no-store")])
    }
}
