import Database
import Support
import Web

/// Checking a password and opening a login, shared by the API and the sign-in page.
enum SignIn {
    struct Failure: Error {
        let error: AppError
    }

    /// A hash to verify against when the email is unknown, so that both answers take as long.
    static let decoyHash = Crypto.hashPassword(Crypto.newToken())

    /// Verifies the credentials under the rate limit and opens a login whose first tokens
    /// are given. Answers the new login's caller, or throws 401/429.
    static func signIn(
        context: RequestContext, email: String, password: String, kind: String, device: String,
        tokens: [(token: String, kind: TokenKind, ttl: Int)]
    ) throws -> CallerInfo {
        let limits = context.app.config.limits
        // Backoff per (address, account), and for an account failing from many addresses
        // only at the addresses that failed on it (Migrations/0080_login_backoff.sql): the
        // right password from an address that has not failed always gets checked.
        let emailKey = "email:" + email.lowercased()
        let pairKey = "pair:" + context.request.remoteAddress + "|" + email.lowercased()
        let (retry, row) = try context.anonymous { tx in
            try tx.run(
                Statement.value("""
                select app.login_backoff(\(pairKey), \(emailKey), \(limits.loginFreeFailures), \(limits.loginFailuresPerAccount), \
                \(limits.loginBackoffCapSeconds), \(limits.loginWindowSeconds)) as retry
                """, "retry", as: Int.self),
                Statement("select user_id, password_hash from app.password_of(\(email))") { $0.first })
        }
        if let retry, retry > 0 {
            throw AppError(.rateLimited, "too many failed sign-ins; try again later", retryAfter: retry)
        }
        let hash = row?["password_hash"] ?? decoyHash
        let valid = Crypto.verifyPassword(password, hash: hash) && row?["password_hash"] != nil
        guard valid, let userID = row?["user_id"] else {
            try context.anonymous { tx in
                _ = try tx.query("select app.note_login_failure(array[\(pairKey), \(emailKey)])")
            }
            throw AppError(.unauthenticated, "wrong email or password")
        }
        context.loggedUserID = userID
        if !device.isEmpty { context.loggedDevice = device }
        let first = tokens[0]
        let second = tokens.count > 1 ? tokens[1] : nil
        return try context.anonymous { tx in
            _ = try tx.query("""
                select app.open_login(\(userID), \(kind), \(device), \(pairKey), \(Tokens.hash(first.token)), \(first.kind.rawValue), \(first.ttl), \
                \(second.map { Tokens.hash($0.token) }), \(second?.kind.rawValue), \(second?.ttl))
                """)
            _ = try tx.query(Tokens.authenticate(token: first.token, kind: first.kind))
            return try CallerInfo(tx, fromLastQuery: true)
        }
    }
}
