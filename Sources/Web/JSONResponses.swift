import FastCGI
import TidewayJSON

/// The API's JSON answers.
extension HTTPResponse {
    public static func json(_ value: JSON, status: Int = 200, headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json", body: value.serializedBytes(), headers: headers)
    }

    /// JSON made elsewhere (PostgreSQL's own rendering), sent as it is.
    package static func jsonBytes(_ bytes: [UInt8], status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json", body: bytes, headers: [("Cache-Control", "no-store")])
    }
}
