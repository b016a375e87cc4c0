import Database
import FastCGI
import Foundation
import Testing

@testable import Support
@testable import TidewayJSON
@testable import Web
@testable import tideway_worker

/// A table of requests through the wired application, each case in a transaction of its
/// own that is rolled back at the end (every request's transactions become savepoints
/// inside it): cases may write, read their writes, and leave the database as they found
/// it, in milliseconds, without nginx. The end-to-end suite covers the same paths through
/// the real stack; this is the fast feedback while changing a handler.
@Suite(.enabled(if: InProcess.database != nil, "needs TIDEWAY_TEST_DATABASE (make test)"))
struct RequestTableTests {
    enum Who: String, CaseIterable {
        case nobody, officer = "gabon.officer2@demo.tideway", otherOfficer = "ecuadoriangalapagos.officer1@demo.tideway"
        case agencyAdmin = "gabon.admin@demo.tideway", globalAdmin = "admin@demo.tideway"
    }

    struct Case: CustomTestStringConvertible {
        let who: Who
        let method: String
        let path: String
        var body: String? = nil
        let status: Int
        var contains: String? = nil
        var testDescription: String { "\(who) \(method) \(path) -> \(status)" }
    }

    static let report = #"{"clientId":"table","changes":[{"changeId":"table-1","collection":"reports","partition":"agency=Gabon","id":"table-report-1","op":"insert","doc":{"_id":"table-report-1","timestamp":"2026-11-01T10:00:00Z"}}]}"#

    static let cases: [Case] = [
        Case(who: .nobody, method: "GET", path: "/healthz", status: 200, contains: "ok"),
        Case(who: .nobody, method: "GET", path: "/api/v1/me", status: 401, contains: #""code":"unauthenticated""#),
        Case(who: .nobody, method: "GET", path: "/users", status: 303),
        Case(who: .nobody, method: "POST", path: "/api/v1/sync/pull", body: #"{"partitions":{}}"#, status: 401),
        Case(who: .officer, method: "GET", path: "/api/v1/me", status: 200, contains: #""agency":"Gabon""#),
        Case(who: .officer, method: "GET", path: "/api/v1/sync/partitions", status: 200, contains: "agency=Gabon"),
        Case(who: .officer, method: "POST", path: "/api/v1/sync/pull",
             body: #"{"partitions":{"agency=Belize":null}}"#, status: 200, contains: #""status":"forbidden""#),
        Case(who: .officer, method: "POST", path: "/api/v1/sync/pull", body: #"{"partitions":[]}"#, status: 400,
             contains: #""code":"bad_request""#),
        Case(who: .officer, method: "POST", path: "/api/v1/sync/push", body: "{", status: 400, contains: "malformed JSON"),
        Case(who: .otherOfficer, method: "POST", path: "/api/v1/sync/push",
             body: report.replacingOccurrences(of: "table-1", with: "table-2"), status: 200, contains: #""status":"rejected""#),
        Case(who: .officer, method: "GET", path: "/metrics", status: 200),
        Case(who: .agencyAdmin, method: "GET", path: "/api/v1/me", status: 200, contains: #""role":"agencyAdmin""#),
        Case(who: .globalAdmin, method: "POST", path: "/api/v1/sync/pull",
             body: #"{"partitions":{"agency=Gabon":null},"limit":1}"#, status: 200, contains: #""status":"ok""#),
    ]

    @Test(arguments: cases) func request(_ row: Case) throws {
        try InProcess.inRolledBackCase { app in
            let token = try row.who == .nobody ? nil : InProcess.signIn(app, row.who.rawValue)
            let request = row.body.map { InProcess.json(row.method, row.path, $0, token: token) }
                ?? HTTPRequest(method: row.method, path: row.path,
                               headers: token.map { ["authorization": "Bearer \($0)"] } ?? [:], params: ["REMOTE_ADDR": "127.0.0.1"])
            let response = app.handle(request)
            let text = InProcess.body(response)
            #expect(response.status == row.status, "\(text.prefix(300))")
            if let expected = row.contains { #expect(text.contains(expected), "\(text.prefix(300))") }
        }
    }

    /// A case's writes are visible to its later requests and gone after it.
    @Test func aCaseSeesItsOwnWritesAndLeavesNothing() throws {
        try InProcess.inRolledBackCase { app in
            let token = try InProcess.signIn(app, Who.officer.rawValue)
            let push = app.handle(InProcess.json("POST", "/api/v1/sync/push", Self.report, token: token))
            #expect(InProcess.body(push).contains(#""status":"applied""#), "\(InProcess.body(push))")
            let again = app.handle(InProcess.json("POST", "/api/v1/sync/push", Self.report, token: token))
            #expect(InProcess.body(again).contains(#""status":"duplicate""#))
        }
        let left = try Connection(conninfo: InProcess.adminDatabase ?? InProcess.database ?? "")
            .execute("select count(*) as n from sync.reports where id = 'table-report-1'")
        #expect(left.first?["n"] == "0")
    }
}

extension InProcess {
    static let adminDatabase = ProcessInfo.processInfo.environment["TIDEWAY_TEST_ADMIN_DATABASE"]

    /// Runs `body` against an application whose one connection sits in a transaction that
    /// is rolled back afterwards.
    static func inRolledBackCase(_ body: (App) throws -> Void) throws {
        let shared = try app
        let connection = try Connection(conninfo: database ?? "")
        _ = try connection.execute("begin")
        defer { _ = try? connection.execute("rollback") }
        // What a real transaction's end would forget: the caller's claims.
        connection.nesting = ["""
            select set_config('tideway.user_id', '', true), set_config('tideway.role', '', true),
                   set_config('tideway.agency', '', true), set_config('tideway.login_id', '', true),
                   set_config('tideway.device', '', true)
            """]
        let isolated = App(config: shared.config, database: ConnectionPool(pinned: connection), templates: shared.templates,
                           secrets: shared.secrets, routes: try Capabilities(config: shared.config).routes)
        try body(isolated)
    }

    static func signIn(_ app: App, _ email: String) throws -> String {
        let login = app.handle(json("POST", "/api/v1/auth/login", #"{"email":"\#(email)","password":"tideway-demo"}"#))
        guard login.status == 200, let token = try JSON(parsing: body(login))["accessToken"]?.stringValue else {
            throw AppError(.unauthenticated, "sign-in failed: \(login.status) \(body(login))")
        }
        return token
    }
}
