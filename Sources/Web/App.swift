import Database
import FastCGI
import Foundation
import Support

/// The application: configuration, the connection pool, templates, secrets and routes.
/// One per worker process, shared by its threads. What a capability keeps for the process's
/// life (the long-poll hub, a mail relay) is not here: the executable's wiring makes it and
/// hands it to that capability's routes, so this layer knows no capability.
public final class App: Sendable {
    public let config: Config
    public let database: ConnectionPool
    public let templates: Templates
    public let secrets: Secrets
    /// The streaming replica pulls may read; nil without TIDEWAY_REPLICA_DATABASE.
    public let replica: ReplicaReads?
    private let router: Router

    public init(config: Config, database: ConnectionPool, templates: Templates, secrets: Secrets,
                replica: ReplicaReads? = nil, routes: (inout Router) -> Void) {
        self.config = config
        self.database = database
        self.templates = templates
        self.secrets = secrets
        self.replica = replica
        var router = Router()
        routes(&router)
        self.router = router
    }

    /// Parse, route, run, and turn any error into the contract's answer: the one place
    /// where errors become HTTP.
    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        let started = DispatchTime.now()
        var response: HTTPResponse
        let context: RequestContext
        switch router.match(method: request.method, path: request.path) {
        case .found(let handler, let params, let pattern):
            context = RequestContext(request: request, app: self, params: params, route: pattern)
            do {
                response = try handler(context)
            } catch {
                response = errorResponse(AppError.from(error, requestID: request.requestID), for: context)
            }
        case .wrongMethod(let allowed):
            context = RequestContext(request: request, app: self, params: [:])
            var error = AppError(.methodNotAllowed, "method \(request.method) not allowed here")
            error.allow = allowed
            response = errorResponse(error, for: context)
        case .none:
            context = RequestContext(request: request, app: self, params: [:])
            response = errorResponse(.notFound("no such path"), for: context)
        }
        if request.method == "HEAD" { response.body = .bytes([]) }
        // Both durations are the head's (RequestLog, "durationMs").
        let headReady = started.secondsElapsed
        guard case .stream(let produce) = response.body else {
            recordAnswer(context, status: response.status, seconds: headReady)
            return response
        }
        // A streamed answer is recorded once its body has run: the caller is known only after
        // the body's own transaction authenticated (a pull whose presence touch was skipped
        // reads no claims before it), and a body that fails before its first byte answers
        // with its error's status, not the head's.
        let head = response.status
        response.body = .stream { [self] writer in
            var status = head
            defer { recordAnswer(context, status: status, seconds: headReady) }
            do {
                try produce(writer)
            } catch where !writer.isCommitted {
                // Before its first byte, the contract's error in its place (as if the handler
                // had thrown); after it, the answer is cut short.
                let error = AppError.from(error, requestID: request.requestID)
                Log.info("streamed answer replaced by \(error.status) before its first byte", requestID: request.requestID)
                status = error.status
                writer.answerInstead(errorResponse(error, for: context))
            } catch {
                Log.error("streamed answer cut short: \(error)", requestID: request.requestID)
                throw error
            }
        }
        return response
    }

    /// The answer's metrics and its request log line (idle polls only counted, unless
    /// TIDEWAY_LOG_IDLE_POLLS).
    private func recordAnswer(_ context: RequestContext, status: Int, seconds: Double) {
        Metrics.record(method: context.request.method, route: context.route, status: status, seconds: seconds)
        if !context.idlePoll || config.logIdlePolls {
            RequestLog.write(context, status: status, seconds: seconds)
        }
    }

    func errorResponse(_ error: AppError, for context: RequestContext) -> HTTPResponse {
        var error = error
        error.requestID = context.requestID
        if context.isAPI { return error.jsonResponse }
        return Pages.error(error, context: context)
    }
}

/// Server secrets, read once at start from the database (app.server_secret).
public struct Secrets: Sendable {
    public let cursorKey: [UInt8]
    public let csrfKey: [UInt8]

    public init(cursorKey: [UInt8], csrfKey: [UInt8]) {
        self.cursorKey = cursorKey
        self.csrfKey = csrfKey
    }

    public static func load(from connection: Connection) throws -> Secrets {
        let rows = try connection.execute(
            "select app.server_secret('cursor_key') as cursor, app.server_secret('csrf_key') as csrf")
        guard let row = rows.first, let cursor = row["cursor"].flatMap({ Crypto.base64Decode($0) }),
              let csrf = row["csrf"].flatMap({ Crypto.base64Decode($0) }), cursor.count >= 32, csrf.count >= 32
        else { throw AppError(.internal, "server secrets missing: run `tideway migrate`") }
        return Secrets(cursorKey: cursor, csrfKey: csrf)
    }
}
