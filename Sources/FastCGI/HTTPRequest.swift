import Foundation

/// One HTTP request as nginx hands it over FastCGI. Handlers see only this type, so
/// tests can build requests in process without a socket.
public final class HTTPRequest {
    public let method: String
    /// The decoded, normalized path nginx matched (`DOCUMENT_URI`), without the query.
    public let path: String
    /// The raw query string, without `?`.
    public let query: String
    /// Header names lower-cased (`authorization`, `content-type`, `cookie`, ...).
    public let headers: RequestHeaders
    /// Every FastCGI parameter as sent (`REMOTE_ADDR`, `REQUEST_ID`, `HTTPS`, ...).
    public let params: RequestFields
    public let body: RequestBody

    public init(
        method: String, path: String, query: String = "", headers: [String: String] = [:],
        params: [String: String] = [:], body: RequestBody = RequestBody(bytes: [])
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = RequestHeaders(headers)
        self.params = RequestFields(params)
        self.body = body
    }

    /// Builds a request from its FastCGI parameters; headers are read from them when asked.
    public init(params: RequestFields, body: RequestBody) {
        method = params["REQUEST_METHOD"] ?? "GET"
        path = params["DOCUMENT_URI"] ?? String((params["REQUEST_URI"] ?? "/").split(separator: "?", maxSplits: 1).first ?? "/")
        query = params["QUERY_STRING"] ?? ""
        headers = RequestHeaders(params: params)
        self.params = params
        self.body = body
    }

    /// The same from parameters given by name (tests).
    public convenience init(params: [String: String], body: RequestBody) {
        self.init(params: RequestFields(params), body: body)
    }

    /// A byte of a parameter's name as it stands in the header's name (`USER_AGENT` ->
    /// `user-agent`: ASCII, as nginx sends names).
    static func headerNameByte(_ byte: UInt8) -> UInt8 {
        switch byte {
        case UInt8(ascii: "_"): UInt8(ascii: "-")
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): byte + 32
        default: byte
        }
    }

    public var contentLength: Int? { headers["content-length"].flatMap { Int($0) } }
    public var remoteAddress: String { params["REMOTE_ADDR"] ?? "" }
    public var requestID: String { params["REQUEST_ID"] ?? "" }

    /// The media type without parameters, lower-cased (`application/json`).
    public var mediaType: String? {
        guard let type = headers["content-type"] else { return nil }
        let utf8 = type.utf8
        if utf8.allSatisfy({ $0 < 0x80 }) {
            // Every request with a body asks: on bytes (Character and Unicode case
            // mapping cost a tenth of an idle poll's worker CPU).
            let blank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
            let bare = utf8.prefix { $0 != UInt8(ascii: ";") }
            guard let first = bare.firstIndex(where: { !blank($0) }), let last = bare.lastIndex(where: { !blank($0) })
            else { return "" }
            return String(decoding: bare[first...last].map { (65...90).contains($0) ? $0 + 32 : $0 }, as: UTF8.self)
        }
        let bare = type.prefix { $0 != ";" }.drop { $0 == " " || $0 == "\t" }
        return String(bare.reversed().drop { $0 == " " || $0 == "\t" }.reversed()).lowercased()
    }
}
