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
    public let headers: [String: String]
    /// Every FastCGI parameter as sent (`REMOTE_ADDR`, `REQUEST_ID`, `HTTPS`, ...).
    public let params: [String: String]
    public let body: RequestBody

    public init(
        method: String, path: String, query: String = "", headers: [String: String] = [:],
        params: [String: String] = [:], body: RequestBody = RequestBody(bytes: [])
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.params = params
        self.body = body
    }

    /// Builds a request from FastCGI parameters (`KEY=VALUE` strings).
    public convenience init(params: [String: String], body: RequestBody) {
        var headers: [String: String] = [:]
        for (key, value) in params where key.hasPrefix("HTTP_") {
            headers[key.dropFirst(5).lowercased().replacingOccurrences(of: "_", with: "-")] = value
        }
        // nginx sends these two without the HTTP_ prefix.
        if let type = params["CONTENT_TYPE"], !type.isEmpty { headers["content-type"] = type }
        if let length = params["CONTENT_LENGTH"], !length.isEmpty { headers["content-length"] = length }
        let uri = params["REQUEST_URI"] ?? "/"
        let path = params["DOCUMENT_URI"] ?? String(uri.split(separator: "?", maxSplits: 1).first ?? "/")
        self.init(
            method: params["REQUEST_METHOD"] ?? "GET", path: path, query: params["QUERY_STRING"] ?? "",
            headers: headers, params: params, body: body)
    }

    public var contentLength: Int? { headers["content-length"].flatMap { Int($0) } }
    public var remoteAddress: String { params["REMOTE_ADDR"] ?? "" }
    public var requestID: String { params["REQUEST_ID"] ?? "" }

    /// The media type without parameters, lower-cased (`application/json`).
    public var mediaType: String? {
        guard let type = headers["content-type"] else { return nil }
        return type.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
    }
}
