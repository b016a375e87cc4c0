import Foundation
import Testing

@testable import FastCGI
@testable import Web

/// The request path's own parsing (FastCGI parameters, body, Authorization), which was
/// rewritten without Foundation's string functions for speed: the same answers as before.
@Suite struct RequestParsingTests {
    @Test func headerNamesAreLowerCasedWithDashes() {
        let request = HTTPRequest(params: [
            "HTTP_USER_AGENT": "curl", "HTTP_X_REQUEST_ID": "r1", "HTTP_AUTHORIZATION": "Bearer t",
            "CONTENT_TYPE": "application/json; charset=utf-8", "CONTENT_LENGTH": "2", "REQUEST_METHOD": "POST",
            "DOCUMENT_URI": "/api/v1/sync/pull", "QUERY_STRING": "a=1",
        ], body: RequestBody(bytes: [123, 125]))
        #expect(request.headers["user-agent"] == "curl")
        #expect(request.headers["x-request-id"] == "r1")
        #expect(request.headers["authorization"] == "Bearer t")
        #expect(request.headers["content-length"] == "2")
        #expect(request.method == "POST" && request.path == "/api/v1/sync/pull" && request.query == "a=1")
    }

    @Test func parametersAreReadAsSentFromLibfcgisEntries() {
        // As libfcgi hands them over: NAME=VALUE C strings, then NULL.
        let sent = ["REQUEST_METHOD=POST", "DOCUMENT_URI=/api/v1/sync/pull", "HTTP_X_TRACE=a=b", "CONTENT_TYPE=",
                    "HTTP_CONTENT_TYPE=text/plain", "HTTP_COOKIE=first", "HTTP_COOKIE=second", "EMPTY=", "NO_VALUE", "HTTP_ACCEPT=*/*"]
        var entries: [UnsafeMutablePointer<CChar>?] = sent.map { strdup($0) } + [nil]
        defer { entries.forEach { free($0) } }
        let params = entries.withUnsafeMutableBufferPointer { RequestFields(entries: $0.baseAddress) }
        let request = HTTPRequest(params: params, body: RequestBody(bytes: []))
        #expect(request.method == "POST" && request.path == "/api/v1/sync/pull" && request.query == "")
        #expect(request.params["HTTP_X_TRACE"] == "a=b")  // split at the first '='
        #expect(request.params["EMPTY"] == "")
        // An entry without '=' has no value, and its name does not run into the next entry.
        #expect(request.params["NO_VALUE"] == nil && request.params["NO_VALUE\0HTTP_ACCEPT"] == nil)
        #expect(request.params["REMOTE_ADDR"] == nil && request.params["DOCUMENT"] == nil && request.params["REQUEST_METHOD="] == nil)
        #expect(request.headers["x-trace"] == "a=b")
        #expect(request.headers["accept"] == "*/*")
        #expect(request.headers["cookie"] == "second")  // a repeated name: the last one, as a dictionary kept
        #expect(request.headers["content-type"] == "text/plain")  // CONTENT_TYPE empty: the header's own
        #expect(request.headers["X-TRACE"] == nil && request.headers["x_trace"] == nil && request.headers["trace"] == nil)
        #expect(RequestFields(entries: nil)["REQUEST_METHOD"] == nil)
    }

    @Test func mediaTypeDropsParametersAndBlanks() {
        func type(_ value: String?) -> String? {
            HTTPRequest(method: "POST", path: "/", headers: value.map { ["content-type": $0] } ?? [:]).mediaType
        }
        #expect(type("application/json") == "application/json")
        #expect(type("Application/JSON; charset=utf-8") == "application/json")
        #expect(type("  application/json \t; x=y") == "application/json")
        #expect(type(";charset=utf-8") == "")
        #expect(type(" \t ") == "")
        #expect(type("Text/Ünï ; a=b") == "text/ünï")  // not ASCII: the Unicode path
        #expect(type(nil) == nil)
    }

    @Test func bodiesAreReadWholeAndTheirLimitsHold() throws {
        let bytes = Array(repeating: UInt8(ascii: "a"), count: 300_000)
        #expect(try RequestBody(bytes: bytes).readAll(limit: 1_000_000) == bytes)
        #expect(try RequestBody(bytes: []).readAll(limit: 10) == [])
        #expect(throws: RequestBody.Failure.tooLarge) { try RequestBody(bytes: bytes).readAll(limit: 299_999) }

        // A stream that says less than it holds, or more.
        func stream(_ data: [UInt8], declared: Int?) -> RequestBody {
            var offset = 0
            return RequestBody(declaredLength: declared) { buffer in
                let n = min(buffer.count, data.count - offset)
                for i in 0..<n { buffer[i] = data[offset + i] }
                offset += n
                return n
            }
        }
        #expect(try stream(bytes, declared: nil).readAll(limit: 1_000_000) == bytes)
        #expect(try stream(bytes, declared: 10).readAll(limit: 1_000_000) == bytes)
        #expect(throws: RequestBody.Failure.tooLarge) { try stream(bytes, declared: 10).readAll(limit: 100_000) }
        #expect(throws: RequestBody.Failure.truncated) { try stream(Array(bytes[..<5]), declared: 10).readAll(limit: 100) }
    }

    @Test func bearerTokensAreTakenFromTheirHeader() {
        let token = RequestContext.bearerToken(in:)
        #expect(token("Bearer abc-_1") == "abc-_1")
        #expect(token("bearer  abc \t") == "abc")
        #expect(token("Bearer ") == nil)
        #expect(token("Bearer \tabc") == "abc")
        #expect(token("Bearer a b") == "a b")
        #expect(token("Bearer abc ") == "abc")
        #expect(token("Bearer") == nil)
        #expect(token("Basic abc") == nil)
        #expect(token(nil) == nil)
    }
}
