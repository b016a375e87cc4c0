import Database
import FastCGI
import Foundation
import TidewayJSON

/// What a handler gets: the request, its path parameters, and the application.
public final class RequestContext {
    public let request: HTTPRequest
    public let app: App
    public let params: [String: String]
    /// The matched route's pattern (`/boardings/:id`), nil when no route matched.
    public let route: String?

    /// Who made the request, for its log line (`App.handle`, `RequestLog`): the user is noted
    /// by the transaction helpers below once app.authenticate has answered (and by sign-in),
    /// the device by the handlers that are told one (push and pull's `clientId`, sign-in's
    /// `device`). Never a token, a password or a document.
    public var loggedUserID: String?
    public var loggedClientID: String?
    public var loggedDevice: String?
    /// The answer is a pull's "nothing new" for every partition it asked (an idle poll):
    /// counted, and without a request log line unless TIDEWAY_LOG_IDLE_POLLS is on
    /// (`App.handle`). A device polls every few seconds all day: one line each was a
    /// twentieth of the worker's CPU per poll, and most of a quiet server's log.
    public var idlePoll = false
    /// How many bytes `jsonBody` read: a push whose whole body is shorter than the string
    /// limit holds no string over it, and skips looking (`PushRoute`).
    public private(set) var jsonBodyBytes: Int?

    init(request: HTTPRequest, app: App, params: [String: String], route: String? = nil) {
        self.request = request
        self.app = app
        self.params = params
        self.route = route
    }

    public var requestID: String { request.requestID }

    /// True for the JSON API (and operations paths): errors answer as JSON there.
    public var isAPI: Bool { Self.isAPIPath(request.path) }

    static func isAPIPath(_ path: String) -> Bool {
        path.hasPrefix("/api/") || path == "/healthz" || path == "/metrics"
    }

    /// The query string's parameters (`a=1&b=x`), percent-decoded; the last one wins.
    public lazy var query: [String: String] = FormData.parse(request.query).last

    /// Every value of each query parameter, for repeated ones (`partition=a&partition=b`).
    public var queryValues: [String: [String]] { FormData.parse(request.query).all }

    /// The body as JSON, with the contract's checks: media type, size, syntax, depth.
    /// `stringBytes`: a longer string limit than the usual one (push bodies carry inline
    /// pictures; PushRoute then holds every other string to the usual limit).
    public func jsonBody(stringBytes: Int? = nil) throws -> JSON {
        guard request.mediaType == "application/json" else {
            throw AppError(.unsupportedMediaType, "expected Content-Type: application/json")
        }
        let bytes = try request.body.readAll(limit: app.config.limits.bodyBytes)
        jsonBodyBytes = bytes.count
        var limits = JSONLimits()
        limits.maxDepth = app.config.limits.depth
        limits.maxStringBytes = stringBytes ?? app.config.limits.stringBytes
        return try JSON(parsing: bytes, limits: limits)
    }

    /// The body as a JSON object whose keys are all in `allowed`.
    public func jsonObject(allowing allowed: Set<String>, stringBytes: Int? = nil) throws -> JSONObject {
        guard case .object(let fields) = try jsonBody(stringBytes: stringBytes) else { throw AppError.badRequest("expected a JSON object") }
        if let unknown = fields.keys.first(where: { !allowed.contains($0) }) {
            throw AppError.badRequest("unknown field '\(unknown)'")
        }
        return fields
    }

    /// The bearer token of the Authorization header, if any.
    public var bearerToken: String? { Self.bearerToken(in: request.headers["authorization"]) }

    static func bearerToken(in header: String?) -> String? {
        guard let header else { return nil }
        // What every client sends, on bytes: `Bearer <token>` (no blanks around the token).
        let utf8 = header.utf8
        if utf8.count > 7, utf8.starts(with: "Bearer ".utf8), let last = utf8.last, last != UInt8(ascii: " "),
           last != UInt8(ascii: "\t"), utf8.dropFirst(7).first.map({ $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }) == true {
            return String(header.dropFirst(7))
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        // Tokens are base64url: any blank in or around one makes it unknown anyway.
        let token = parts[1].trimmingPrefix(while: { $0 == " " || $0 == "\t" })
        let end = token.lastIndex(where: { $0 != " " && $0 != "\t" })
        return end.map { String(token[...$0]) }
    }

    /// One transaction as the caller who holds `token`: BEGIN and app.authenticate go out
    /// with the body's first query. An unknown, expired or revoked token is a 401.
    public func asCaller<T>(token: String, kind: TokenKind = .access, readOnly: Bool = false, snapshot: Bool = false,
                            _ body: (Transaction, CallerInfo) throws -> T) throws -> T {
        try app.database.withConnection { connection in
            try withRetry {
                try connection.transaction(readOnly: readOnly, snapshot: snapshot, opening: [Tokens.authenticate(token: token, kind: kind)]) { tx in
                    defer { noteCaller(of: tx) }
                    return try body(tx, CallerInfo(lazy: tx))
                }
            }
        }
    }

    /// The API caller from the Bearer header.
    public func asAPICaller<T>(readOnly: Bool = false, snapshot: Bool = false,
                               _ body: (Transaction, CallerInfo) throws -> T) throws -> T {
        guard let token = bearerToken else { throw AppError.unauthenticated }
        return try asCaller(token: token, readOnly: readOnly, snapshot: snapshot, body)
    }

    /// Read-only work of the API caller that a replica may answer: there once it has
    /// replayed `primaryLSN` (the primary's WAL position when this request began; see
    /// `ReplicaReads`), else on the primary. Without a replica or a position: the primary.
    public func asAPICallerReading<T>(replicaAfter primaryLSN: String?, snapshot: Bool = false,
                                      _ body: (Transaction, CallerInfo) throws -> T) throws -> T {
        if let primaryLSN, let replica = app.replica, let token = bearerToken,
           let answer = replica.read(after: primaryLSN, { connection in
               try connection.transaction(readOnly: true, snapshot: snapshot,
                                          opening: [Tokens.authenticate(token: token, kind: .access)]) { tx in
                   defer { noteCaller(of: tx) }
                   return try body(tx, CallerInfo(lazy: tx))
               }
           }) {
            return answer
        }
        return try asAPICaller(readOnly: true, snapshot: snapshot, body)
    }

    /// The primary's WAL position now, for `asAPICallerReading`; nil without a replica.
    public func primaryPosition() throws -> String? {
        guard app.replica != nil else { return nil }
        return try app.database.withConnection { connection in
            try connection.execute("select pg_current_wal_lsn()::text as lsn").first?.decodeIfPresent("lsn", as: String.self)
        }
    }

    /// The API caller's claims without reading who they are: for handlers that need no
    /// `CallerInfo`. BEGIN and app.authenticate then really ride with the body's first
    /// query (building a `CallerInfo` has to send them first, a round trip of its own);
    /// an unknown, expired or revoked token still fails that query with 401.
    public func withAPIClaims<T>(readOnly: Bool = false, _ body: (Transaction) throws -> T) throws -> T {
        guard let token = bearerToken else { throw AppError.unauthenticated }
        return try app.database.withConnection { connection in
            try withRetry {
                try connection.transaction(readOnly: readOnly, opening: [Tokens.authenticate(token: token, kind: .access)]) { tx in
                    defer { noteCaller(of: tx) }
                    return try body(tx)
                }
            }
        }
    }

    /// The caller app.authenticate found, for the log line, if its answer has come (it is
    /// never asked for only for this).
    private func noteCaller(of tx: Transaction) {
        if loggedUserID == nil, let id = tx.openingResults.last?.first?["user_id"], !id.isEmpty { loggedUserID = id }
    }

    /// A transaction with no caller (sign-in, health): sees nothing the policies guard.
    public func anonymous<T>(readOnly: Bool = false, _ body: (Transaction) throws -> T) throws -> T {
        try app.database.withConnection { connection in
            try withRetry { try connection.transaction(readOnly: readOnly, body) }
        }
    }
}

/// Serialization failures and deadlocks are PostgreSQL asking us to try again.
func withRetry<T>(attempts: Int = 4, _ body: () throws -> T) throws -> T {
    var attempt = 1
    while true {
        do {
            return try body()
        } catch let error as DatabaseError where error.isRetryableConflict && attempt < attempts {
            attempt += 1
        }
    }
}

