/// The one error of the database layer. Its description is deliberately generic: the
/// server's message may contain data, so it goes to the log (`detail`), never to a client.
public struct DatabaseError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The server is unreachable or the connection broke: safe to retry later.
        case unavailable
        /// The server refused a statement; `sqlState` says why.
        case query
        /// Our own misuse or an answer we did not expect.
        case protocolViolation
    }

    /// Where in a request's database work it failed, for the log (never for clients).
    public enum Phase: String, Sendable, Equatable {
        /// Opening a connection.
        case connect
        /// The transaction's opening statements: BEGIN and the caller's claims
        /// (`app.authenticate`), which ride with the first query.
        case authenticate
        /// One of the request's own statements.
        case statement
        /// The COMMIT (a deferred constraint, a serialization failure, a lost connection).
        case commit
    }

    public let kind: Kind
    /// Set by the layer that knows it (the pool, the transaction); `.statement` otherwise.
    public var phase: Phase = .statement
    /// SQLSTATE, e.g. `42501` insufficient privilege, `23505` unique violation.
    public let sqlState: String?
    /// The server's text: for logs only.
    public let detail: String
    /// Which statement of a pipeline failed.
    public var statementIndex: Int?
    /// The `HINT`/`DETAIL` field's text, used by our own functions to signal a rule (for logs/mapping).
    public var constraint: String?

    public init(kind: Kind, sqlState: String? = nil, detail: String, statementIndex: Int? = nil, constraint: String? = nil) {
        self.kind = kind
        self.sqlState = sqlState
        self.detail = detail
        self.statementIndex = statementIndex
        self.constraint = constraint
    }

    public var description: String {
        "database error (\(kind) at \(phase.rawValue)\(sqlState.map { ", SQLSTATE \($0)" } ?? ""))"
    }

    public var isRetryableConflict: Bool { sqlState == "40001" || sqlState == "40P01" }
}
