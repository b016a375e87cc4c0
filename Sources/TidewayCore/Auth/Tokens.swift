import Database

public enum TokenKind: String, Sendable {
    case access, refresh, session
}

/// Opaque bearer tokens: random, shown to the client once, stored as SHA-256 only.
public enum Tokens {
    public static func hash(_ token: String) -> SQLBytes { SQLBytes(Crypto.sha256(token)) }

    /// The first statement of an authenticated transaction: checks the token and sets the
    /// caller's claims (`tideway.user_id`, `tideway.role`, `tideway.agency`) for it.
    public static func authenticate(token: String, kind: TokenKind) -> SQL {
        "select * from app.authenticate(\(hash(token)), \(kind.rawValue))"
    }
}

public enum Role: String, Sendable, CaseIterable {
    case officer, agencyAdmin, globalAdmin
}

/// Who is calling, as app.authenticate found them. Read from the opening statement's
/// answer, which arrives with the first query of the transaction.
public struct CallerInfo: Sendable {
    public let userID: String
    public let email: String
    public let displayName: String
    public let role: Role
    public let agency: String?
    public let loginID: String

    /// From the transaction's opening app.authenticate, or from its last query when that
    /// query was app.authenticate itself (right after opening a login).
    init(_ tx: Transaction, fromLastQuery: Bool = false) throws {
        try tx.flushOpening()
        let result = fromLastQuery ? tx.lastResult : tx.openingResults.last
        guard let row = result?.first, let id = row["user_id"],
              let role = row["role"].flatMap(Role.init(rawValue:))
        else { throw AppError.unauthenticated }
        userID = id
        email = row["email"] ?? ""
        displayName = row["display_name"] ?? ""
        self.role = role
        agency = row["agency"].flatMap { $0.isEmpty ? nil : $0 }
        loginID = row["login_id"] ?? ""
    }

    public var isGlobalAdmin: Bool { role == .globalAdmin }
    public var isAdmin: Bool { role != .officer }

    public var json: JSON {
        ["id": .string(userID), "email": .string(email), "displayName": .string(displayName),
         "agency": agency.map(JSON.string) ?? .null, "role": .string(role.rawValue)]
    }
}

extension CallerInfo {
    /// The server acting inside one agency's partition (background jobs): no user. The
    /// transaction's claims come from app.job_claims, not from a token.
    init(serviceFor agency: String) {
        userID = ""
        email = ""
        displayName = "Tideway server"
        role = .officer
        self.agency = agency
        loginID = ""
    }
}
