import Database
import FastCGI
import Schema
import Support
import TidewayJSON

/// The one error type of the product. Everything a handler throws ends up as one of
/// these, and `AppError.response` is the one place that turns it into HTTP.
public struct AppError: Error, Sendable, Equatable {
    public enum Code: String, Sendable {
        case badRequest = "bad_request"
        case unauthenticated
        case forbidden
        case notFound = "not_found"
        /// Not in the contract's table; used for a known path with the wrong method.
        case methodNotAllowed = "method_not_allowed"
        case conflict
        case tooLarge = "too_large"
        case unsupportedMediaType = "unsupported_media_type"
        case invalid
        case rateLimited = "rate_limited"
        case unavailable
        case `internal`

        public var status: Int {
            switch self {
            case .badRequest: 400
            case .unauthenticated: 401
            case .forbidden: 403
            case .notFound: 404
            case .methodNotAllowed: 405
            case .conflict: 409
            case .tooLarge: 413
            case .unsupportedMediaType: 415
            case .invalid: 422
            case .rateLimited: 429
            case .unavailable: 503
            case .internal: 500
            }
        }
    }

    public var code: Code
    /// For a person; never contains database text.
    public var message: String
    /// A JSON Pointer into the request, for `invalid`.
    public var path: String?
    public var retryAfter: Int?
    public var allow: [String] = []
    /// nginx's `$request_id` of the request answered (the request log's `requestId` and the
    /// `X-Request-Id` header), set by `App` when it answers: a person reporting an error can
    /// quote it, and the operator finds the request's log lines with it.
    public var requestID: String?

    public init(_ code: Code, _ message: String, path: String? = nil, retryAfter: Int? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.retryAfter = retryAfter
    }

    public var status: Int { code.status }

    public static func badRequest(_ message: String) -> AppError { AppError(.badRequest, message) }
    public static func forbidden(_ message: String = "not allowed") -> AppError { AppError(.forbidden, message) }
    public static func notFound(_ message: String = "not found") -> AppError { AppError(.notFound, message) }
    public static func invalid(_ message: String, path: String? = nil) -> AppError { AppError(.invalid, message, path: path) }
    public static let unauthenticated = AppError(.unauthenticated, "sign in required")

    /// The error's JSON, as in the contract: `{"error": {"code", "message", "path"?, "requestId"?}}`.
    public var json: JSON {
        var fields: JSONObject = ["code": .string(code.rawValue), "message": .string(message)]
        if let path { fields["path"] = .string(path) }
        if let requestID, !requestID.isEmpty { fields["requestId"] = .string(requestID) }
        return ["error": .object(fields)]
    }
}

extension AppError {
    /// Maps anything thrown to the contract. Database details stay in the log.
    public static func from(_ error: any Error, requestID: String = "") -> AppError {
        switch error {
        case let error as AppError:
            return error
        case let error as DatabaseError:
            return from(database: error, requestID: requestID)
        case let error as JSONParseError:
            return AppError(.badRequest, "malformed JSON: \(error)")
        case let error as SchemaViolation:
            return AppError(.invalid, error.message, path: error.path)
        case RequestBody.Failure.tooLarge:
            return AppError(.tooLarge, "request body too large")
        case RequestBody.Failure.truncated:
            return AppError(.badRequest, "request body shorter than its Content-Length")
        default:
            Log.error("unexpected error: \(error)", requestID: requestID)
            return AppError(.internal, "internal error")
        }
    }

    static func from(database error: DatabaseError, requestID: String) -> AppError {
        if error.kind == .unavailable {
            Log.warning("database unavailable at \(error.phase.rawValue): \(error.detail)", requestID: requestID)
            return AppError(.unavailable, "the database is unreachable; try again")
        }
        let state = error.sqlState ?? ""
        // Our own functions raise TWnnn with a message written for people.
        if state.hasPrefix("TW"), let status = Int(state.dropFirst(2)) {
            let code: Code =
                switch status {
                case 400: .badRequest
                case 403: .forbidden
                case 404: .notFound
                case 409: .conflict
                default: .invalid
                }
            return AppError(code, error.detail, path: error.constraint)
        }
        switch state {
        case "28000": return .unauthenticated
        case "42501": return .forbidden()
        case "23505": return AppError(.conflict, "already exists")
        case "40001", "40P01", "55P03", "57014": return AppError(.unavailable, "the server is busy; try again")
        case _ where state.hasPrefix("22") || state.hasPrefix("23"):
            Log.info("rejected by a database rule at \(error.phase.rawValue): \(state) \(error.detail)", requestID: requestID)
            return AppError(.invalid, "the value breaks a rule")
        default:
            Log.error("database error \(state) at \(error.phase.rawValue): \(error.detail)", requestID: requestID)
            return AppError(.internal, "internal error")
        }
    }

    /// The API's answer: JSON, never HTML.
    public var jsonResponse: HTTPResponse {
        var headers: [(String, String)] = [("Cache-Control", "no-store")]
        if let retryAfter { headers.append(("Retry-After", String(retryAfter))) }
        if !allow.isEmpty { headers.append(("Allow", allow.joined(separator: ", "))) }
        return HTTPResponse(status: status, contentType: "application/json", body: json.serializedBytes(), headers: headers)
    }
}
