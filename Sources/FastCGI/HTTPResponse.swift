/// What a handler answers. A streamed body is written after the head, flushed as it goes
/// (exports of 100,000 rows, server-sent events).
public struct HTTPResponse {
    public enum Body {
        case bytes([UInt8])
        case stream((any BodyWriter) throws -> Void)
    }

    public var status: Int
    public var headers: [(String, String)]
    public var body: Body

    public init(status: Int, headers: [(String, String)] = [], body: Body = .bytes([])) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public init(status: Int, contentType: String, body: [UInt8], headers: [(String, String)] = []) {
        self.init(status: status, headers: [("Content-Type", contentType)] + headers, body: .bytes(body))
    }

    public init(status: Int, contentType: String, text: String, headers: [(String, String)] = []) {
        self.init(status: status, contentType: contentType, body: Array(text.utf8), headers: headers)
    }

    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// The first header that must never be sent, described without its value: a name that
    /// is not an HTTP token, or a name or value with CR, LF or NUL (header injection: a value
    /// with CR LF would add headers, or end the head and push the rest into the body).
    public func unsafeHeader() -> String? {
        for (name, value) in headers {
            let nameOK = !name.isEmpty && name.utf8.allSatisfy { Self.isTokenByte($0) }
            guard nameOK else { return "header name \(name.debugDescription) is not a token" }
            if value.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }) {
                return "header \(name) has CR, LF or NUL in its value"
            }
        }
        return nil
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// The CGI-style head FastCGI expects: `Status:` then the headers, then a blank line.
    /// Callers check `unsafeHeader()` first (FastCGIServer does).
    public func head() -> [UInt8] {
        var text = "Status: \(status) \(HTTPResponse.reason(status))\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if case .bytes(let bytes) = body { text += "Content-Length: \(bytes.count)\r\n" }
        text += "\r\n"
        return Array(text.utf8)
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 409: "Conflict"
        case 413: "Payload Too Large"
        case 415: "Unsupported Media Type"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }
}

/// Where a streamed body goes. The head goes out with the first bytes written (or the
/// first flush): until then (`isCommitted` false) the producer may still give another answer
/// in its place (`answerInstead`), e.g. the error it found before its first byte; a producer
/// that throws after that cuts the answer short (FastCGIServer closes the connection, so
/// that the client sees a broken response, never a complete-looking one).
/// `flush` answers false once the client is gone.
public protocol BodyWriter: AnyObject {
    @discardableResult func write(_ bytes: [UInt8]) -> Bool
    @discardableResult func flush() -> Bool
    /// True once the head has gone out.
    var isCommitted: Bool { get }
    /// Answers `response` (its body in bytes) instead; only before anything went out.
    func answerInstead(_ response: HTTPResponse)
}

extension BodyWriter {
    @discardableResult public func write(_ text: String) -> Bool { write(Array(text.utf8)) }
}

/// Collects a response in memory: in-process tests, and nothing else.
public final class BufferedBodyWriter: BodyWriter {
    public private(set) var bytes: [UInt8] = []
    /// The answer given instead of the streamed one (`answerInstead`), if any.
    public private(set) var replacement: HTTPResponse?
    public private(set) var isCommitted = false
    public init() {}
    public func write(_ bytes: [UInt8]) -> Bool {
        isCommitted = true
        self.bytes += bytes
        return true
    }
    public func flush() -> Bool {
        isCommitted = true
        return true
    }
    public func answerInstead(_ response: HTTPResponse) {
        precondition(!isCommitted, "the head has gone out")
        replacement = response
        if case .bytes(let body) = response.body { bytes = body }
        isCommitted = true
    }
}
