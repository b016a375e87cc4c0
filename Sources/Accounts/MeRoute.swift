import FastCGI
import TidewayJSON
import Web

/// `GET /api/v1/me`: the caller's own account, as the login answer's `user`. A client that
/// starts with a stored token asks this to learn whether the token still works and who it
/// belongs to (role or agency may have changed since sign-in). One read of one row under
/// the caller's claims (one round trip: BEGIN, app.authenticate, the query and COMMIT go
/// together): row-level security on app.users lets a user see their own row.
package enum MeRoute {
    package static func register(_ router: inout Router) {
        router.get("/api/v1/me", me)
    }

    static func me(_ context: RequestContext) throws -> HTTPResponse {
        let row = try context.withAPIClaims(readOnly: true) { tx in
            try tx.query("""
                select id, email, display_name, role, agency from app.users where id = app.uid()
                """, thenCommit: true).first
        }
        // The token just proved the user active; a missing row would mean RLS hid it.
        guard let row, let id = row["id"], let role = row["role"] else { throw AppError.unauthenticated }
        let user: JSON = [
            "id": .string(id), "email": .string(row["email"] ?? ""), "displayName": .string(row["display_name"] ?? ""),
            "agency": row["agency"].map(JSON.string) ?? .null, "role": .string(role),
        ]
        return .json(["user": user], headers: [("Cache-Control", "no-store")])
    }
}
