import CCurl
import Foundation
import TidewayModels

/// What went wrong, for a program: the contract's error (`code`, `message`, `path`), or the
/// network, or the state of the client.
public enum TidewayError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server answered with the contract's error shape (or a status without one).
    case server(status: Int, code: String, message: String, path: String?)
    /// The server could not be reached (or the answer was cut off): the change stays queued.
    case network(String)
    /// No login, or the refresh token was refused: sign in again.
    case signedOut
    /// The app asked the client to stay offline.
    case offline
    case local(String)

    public var description: String {
        switch self {
        case .server(let status, let code, let message, let path):
            return "\(status) \(code): \(message)" + (path.map { " at \($0)" } ?? "")
        case .network(let detail): return "network: \(detail)"
        case .signedOut: return "signed out"
        case .offline: return "offline"
        case .local(let detail): return detail
        }
    }
}

public struct HTTPResponse: Sendable {
    public var status: Int
    public var body: Data

    public func json() throws -> JSONValue {
        do { return try JSONValue.decode(body) } catch {
            throw TidewayError.network("answer is not JSON (status \(status))")
        }
    }

    /// The contract's error of a non-2xx answer.
    public var error: TidewayError {
        let value = try? JSONValue.decode(body)
        let error = value?["error"]
        return .server(status: status, code: error?["code"]?.stringValue ?? "http_\(status)",
                       message: error?["message"]?.stringValue ?? "status \(status)",
                       path: error?["path"]?.stringValue)
    }
}

/// HTTP over libcurl: it runs the same on Linux and Apple platforms, trusts a given CA file
/// (a self-hosted server's own), and streams an answer as it comes (the event stream).
/// Foundation's URLSession on Linux offers neither a per-session CA nor `bytes(for:)`.
public final class HTTPTransport: Sendable {
    public let baseURL: String
    public let caFile: String?

    private static let initialized: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    public init(baseURL: String, caFile: String?) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.caFile = caFile
    }

    /// Collects the answer's bytes, or hands each chunk to `stream` (which may stop it).
    private final class Sink {
        var data = Data()
        var headers: [String] = []
        let stream: ((Data) -> Bool)?
        let onHeaders: ((Int) -> Void)?
        let shouldStop: (() -> Bool)?
        let onHeaderLine: ((String) -> Void)?
        init(stream: ((Data) -> Bool)?, onHeaders: ((Int) -> Void)?, shouldStop: (() -> Bool)?,
             onHeaderLine: ((String) -> Void)?) {
            self.stream = stream
            self.onHeaders = onHeaders
            self.shouldStop = shouldStop
            self.onHeaderLine = onHeaderLine
        }

        func header(_ line: String) {
            onHeaderLine?(line)
            if line.hasPrefix("HTTP/") {
                headers = [line]
            } else if line == "\r\n" || line == "\n" {
                let parts = headers.first?.split(separator: " ") ?? []
                if parts.count > 1, let status = Int(parts[1]) { onHeaders?(status) }
            } else {
                headers.append(line)
            }
        }
    }

    /// One request. `timeout` is in seconds (0: none). Throws `.network` when no answer came.
    public func send(_ method: String, _ path: String, headers: [String] = [], body: Data? = nil,
                     timeout: Int = 60, stream: ((Data) -> Bool)? = nil, onHeaders: ((Int) -> Void)? = nil,
                     shouldStop: (() -> Bool)? = nil, onHeaderLine: ((String) -> Void)? = nil) throws -> HTTPResponse {
        guard Self.initialized, let curl = curl_easy_init() else { throw TidewayError.network("libcurl did not start") }
        defer { curl_easy_cleanup(curl) }
        var list: UnsafeMutablePointer<curl_slist>? = nil
        for header in headers + ["Expect:"] { list = curl_slist_append(list, header) }
        defer { curl_slist_free_all(list) }
        let sink = Sink(stream: stream, onHeaders: onHeaders, shouldStop: shouldStop, onHeaderLine: onHeaderLine)
        let context = Unmanaged.passUnretained(sink).toOpaque()
        let errors = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errors.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        defer { errors.deallocate() }
        var codes = [
            tw_curl_set_string(curl, CURLOPT_URL, baseURL + path),
            tw_curl_set_string(curl, CURLOPT_CUSTOMREQUEST, method),
            tw_curl_set_list(curl, CURLOPT_HTTPHEADER, list),
            tw_curl_set_long(curl, CURLOPT_NOSIGNAL, 1),
            tw_curl_set_long(curl, CURLOPT_CONNECTTIMEOUT, 10),
            tw_curl_set_long(curl, CURLOPT_TIMEOUT, timeout),
            tw_curl_set_string(curl, CURLOPT_ERRORBUFFER, errors),
            tw_curl_set_write(curl, { bytes, size, count, userdata in
                let sink = Unmanaged<Sink>.fromOpaque(userdata!).takeUnretainedValue()
                let chunk = Data(bytes: bytes!, count: size * count)
                if let stream = sink.stream {
                    return stream(chunk) ? size * count : 0
                }
                sink.data.append(chunk)
                return size * count
            }, context),
            tw_curl_set_header(curl, { bytes, size, count, userdata in
                let sink = Unmanaged<Sink>.fromOpaque(userdata!).takeUnretainedValue()
                sink.header(String(decoding: UnsafeRawBufferPointer(start: bytes, count: size * count), as: UTF8.self))
                return size * count
            }, context),
        ]
        if shouldStop != nil {
            codes.append(tw_curl_set_progress(curl, { userdata, _, _, _, _ in
                let sink = Unmanaged<Sink>.fromOpaque(userdata!).takeUnretainedValue()
                return sink.shouldStop?() == true ? 1 : 0
            }, context))
        }
        if let caFile { codes.append(tw_curl_set_string(curl, CURLOPT_CAINFO, caFile)) }
        if let body = body ?? (method == "GET" || method == "HEAD" ? nil : Data()) {
            codes.append(body.withUnsafeBytes { tw_curl_set_body(curl, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, body.count) })
        }
        if let refused = codes.first(where: { $0 != CURLE_OK }) {
            throw TidewayError.network("libcurl refused a setting: " + String(cString: curl_easy_strerror(refused)))
        }
        let code = curl_easy_perform(curl)
        withExtendedLifetime(sink) {}
        if code == CURLE_WRITE_ERROR || code == CURLE_ABORTED_BY_CALLBACK, stream != nil {
            return HTTPResponse(status: tw_curl_response_code(curl), body: Data())
        }
        guard code == CURLE_OK else {
            let detail = String(cString: errors)
            throw TidewayError.network(detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail)
        }
        return HTTPResponse(status: tw_curl_response_code(curl), body: sink.data)
    }
}
