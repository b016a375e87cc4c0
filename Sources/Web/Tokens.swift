import Database
import Support
import TidewayJSON

public enum TokenKind: String, Sendable {
    case access, refresh, session
}

/// Opaque bearer tokens: random, shown to the client once, stored as SHA-256 only.
public enum Tokens {
    /// What the database stores and looks a token up by, and what workers remember it by
    /// (the idle polls' and downloads' memory, `AuthCache`).
    public static func digest(_ token: String) -> [UInt8] { Crypto.sha256(token) }

    /// 64 bits of a token's digest: the key a worker's per-login memory keeps it under
    /// (presence touches, devices' rows). A collision of two logins only delays one of them
    /// by that memory's interval.
    public static func memoryKey(_ digest: [UInt8]) -> Int { digest.prefix(8).reduce(0) { $0 << 8 | Int($1) } }

    public static func hash(_ token: String) -> SQLBytes { SQLBytes(digest(token)) }

    /// The first statement of an authenticated transaction: checks the token and sets the
    /// caller's claims (`tideway.user_id`, `tideway.role`, `tideway.agency`) for it.
    /// Prepared once per connection: every authenticated request sends it, and its plan is
    /// a function call whatever the token.
    public static func authenticate(token: String, kind: TokenKind) -> SQL {
        .reused("select * from app.authenticate(\(hash(token)), \(kind.rawValue))")
    }
}

public enum Role: String, Sendable, CaseIterable {
    case officer, agencyAdmin, globalAdmin
}

/// Who is calling, as app.authenticate found them. The opening statements of a caller's
/// transaction ride with its first query, so the answer is read only when first needed:
/// usually after that query, at no extra round trip. Read before any query, it sends the
/// opening on its own. If the token turned out to be unknown, the fields are those of nobody
/// (no agency, least role) and every later statement of the transaction fails with 401.
///
/// `@unchecked Sendable`: used by the one thread that runs its transaction.
public final class CallerInfo: @unchecked Sendable {
    struct Fields {
        var userID = ""
        var email = ""
        var displayName = ""
        var role = Role.officer
        var agency: String?
        var loginID = ""
    }

    private let tx: Transaction?
    private var resolved: Fields?

    init(fields: Fields) {
        self.tx = nil
        resolved = fields
    }

    /// Resolved when first read, from the transaction's opening app.authenticate.
    init(lazy tx: Transaction) {
        self.tx = tx
    }

    /// At once, from the last query when it was app.authenticate itself (right after opening a
    /// login); a missing answer is a 401.
    package init(_ tx: Transaction, fromLastQuery: Bool) throws {
        self.tx = nil
        let result = fromLastQuery ? tx.lastResult : tx.openingResults.last
        guard let fields = Self.fields(from: result) else { throw AppError.unauthenticated }
        resolved = fields
    }

    private var fields: Fields {
        if let resolved { return resolved }
        // Not swallowed: a failed opening (an unknown token) is kept by the transaction as its
        // `openingFailure`, and its next statement or its commit throws it (a 401).
        if let tx, tx.openingPending { try? tx.flushOpening() }
        let fields = Self.fields(from: tx?.openingResults.last) ?? Fields()
        resolved = fields
        return fields
    }

    private static func fields(from result: QueryResult?) -> Fields? {
        guard let row = result?.first, let id = row["user_id"], let role = row["role"].flatMap(Role.init(rawValue:)) else {
            return nil
        }
        return Fields(userID: id, email: row["email"] ?? "", displayName: row["display_name"] ?? "", role: role,
                      agency: row["agency"].flatMap { $0.isEmpty ? nil : $0 }, loginID: row["login_id"] ?? "")
    }

    public var userID: String { fields.userID }
    public var email: String { fields.email }
    public var displayName: String { fields.displayName }
    public var role: Role { fields.role }
    public var agency: String? { fields.agency }
    public var loginID: String { fields.loginID }
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
    package convenience init(serviceFor agency: String) {
        self.init(fields: Fields(displayName: "Tideway server", role: .officer, agency: agency))
    }
}
