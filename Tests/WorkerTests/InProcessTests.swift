import FastCGI
import Foundation
import Testing

@testable import Support
@testable import TidewayJSON
@testable import Web
@testable import tideway_worker

/// Requests fed to the application in process (no FastCGI, no nginx), against the test
/// stack's real database. Skipped when no test stack is running (`make test` starts one).
@Suite(.enabled(if: InProcess.database != nil, "needs TIDEWAY_TEST_DATABASE (make test)"))
struct InProcessTests {
    @Test func healthzAnswersOk() throws {
        let response = try InProcess.app.handle(HTTPRequest(method: "GET", path: "/healthz"))
        #expect(response.status == 200)
        #expect(InProcess.body(response) == "ok\n")
    }

    @Test func apiErrorsAreJSON() throws {
        let app = try InProcess.app
        let missing = app.handle(HTTPRequest(method: "GET", path: "/api/v1/nope"))
        #expect(missing.status == 404 && missing.header("Content-Type") == "application/json")
        #expect(InProcess.body(missing).contains(#""code":"not_found""#))
        let wrongMethod = app.handle(HTTPRequest(method: "GET", path: "/api/v1/sync/pull"))
        #expect(wrongMethod.status == 405 && wrongMethod.header("Allow") == "POST")
        let noToken = app.handle(InProcess.json("POST", "/api/v1/sync/pull", #"{"partitions":{}}"#))
        #expect(noToken.status == 401)
        let garbage = app.handle(InProcess.json("POST", "/api/v1/auth/login", #"{"email": "#))
        #expect(garbage.status == 400 && InProcess.body(garbage).contains("bad_request"))
        let form = app.handle(HTTPRequest(method: "POST", path: "/api/v1/auth/login", headers: ["content-type": "text/plain"]))
        #expect(form.status == 415)
    }

    @Test func signInThenPullAsAnOfficer() throws {
        let app = try InProcess.app
        let login = app.handle(InProcess.json("POST", "/api/v1/auth/login",
                                              #"{"email":"gabon.officer2@demo.tideway","password":"tideway-demo"}"#))
        #expect(login.status == 200)
        let answer = try JSON(parsing: InProcess.body(login))
        let token = try #require(answer["accessToken"]?.stringValue)
        #expect(answer["user"]?["agency"] == "Gabon")
        let pull = app.handle(InProcess.json("POST", "/api/v1/sync/pull",
                                             #"{"partitions":{"agency=Gabon":null,"agency=WildAid":null,"foo":null},"limit":5}"#,
                                             token: token))
        #expect(pull.status == 200)
        let partitions = try JSON(parsing: InProcess.body(pull))["partitions"]
        #expect(partitions?["agency=Gabon"]?["status"] == "ok")
        #expect(partitions?["agency=Gabon"]?["changes"]?.arrayValue?.count == 5)
        #expect(partitions?["agency=Gabon"]?["more"] == true)
        #expect(partitions?["agency=WildAid"]?["status"] == "forbidden")
        #expect(partitions?["foo"]?["status"] == "invalid")
    }

    @Test func signInPageCarriesACSRFToken() throws {
        let page = try InProcess.app.handle(HTTPRequest(method: "GET", path: "/login"))
        #expect(page.status == 200)
        let html = InProcess.body(page)
        #expect(html.contains(#"name="_csrf""#) && html.contains(#"name="email""#) && html.contains(#"name="password""#))
        #expect(page.headers.contains { $0.0 == "Set-Cookie" && $0.1.contains("HttpOnly") && $0.1.contains("Secure") })
    }

    @Test func signedOutPagesRedirectToSignIn() throws {
        let home = try InProcess.app.handle(HTTPRequest(method: "GET", path: "/"))
        #expect(home.status == 303 && home.header("Location") == "/login?next=%2F")
    }
}

enum InProcess {
    static let database = ProcessInfo.processInfo.environment["TIDEWAY_TEST_DATABASE"]

    /// One application for the whole run, as a worker process has.
    nonisolated(unsafe) static var shared: App?
    static let lock = NSLock()

    static var app: App {
        get throws {
            lock.lock()
            defer { lock.unlock() }
            if let shared { return shared }
            var config = Config(environment: [:])
            config.database = database ?? ""
            config.home = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().path
            config.threads = 4
            let app = try Capabilities.start(config: config, waitForDatabase: 5)
            shared = app
            return app
        }
    }

    static func json(_ method: String, _ path: String, _ body: String, token: String? = nil) -> HTTPRequest {
        var headers = ["content-type": "application/json"]
        if let token { headers["authorization"] = "Bearer \(token)" }
        return HTTPRequest(method: method, path: path, headers: headers, params: ["REMOTE_ADDR": "127.0.0.1"],
                           body: RequestBody(bytes: Array(body.utf8)))
    }

    static func body(_ response: HTTPResponse) -> String {
        switch response.body {
        case .bytes(let bytes): return String(decoding: bytes, as: UTF8.self)
        case .stream(let produce):
            let writer = BufferedBodyWriter()
            try? produce(writer)
            return String(decoding: writer.bytes, as: UTF8.self)
        }
    }
}
