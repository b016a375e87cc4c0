import Testing

@testable import Accounts
@testable import Web

@Suite struct WebUnitTests {
    @Test func formDecoding() {
        let parsed = FormData.parse("a=1&b=x+y&c=%C3%A1%2F&a=2&empty=&flag")
        #expect(parsed.last["a"] == "2" && parsed.all["a"] == ["1", "2"])
        #expect(parsed.last["b"] == "x y" && parsed.last["c"] == "á/" && parsed.last["empty"] == "" && parsed.last["flag"] == "")
        #expect(FormData.encode("/boardings?q=á b") == "%2Fboardings%3Fq%3D%C3%A1%20b")
    }

    @Test func routerMatchesAndSaysWhichMethods() {
        var router = Router()
        router.get("/boardings/:id", { _ in .init(status: 200) })
        router.post("/boardings/:id", { _ in .init(status: 201) })
        guard case .found(_, let params, let pattern) = router.match(method: "GET", path: "/boardings/42") else {
            Issue.record("no match")
            return
        }
        #expect(params["id"] == "42" && pattern == "/boardings/:id")
        guard case .wrongMethod(let allowed) = router.match(method: "DELETE", path: "/boardings/42") else {
            Issue.record("expected 405")
            return
        }
        #expect(allowed == ["GET", "POST"])
        if case .none = router.match(method: "GET", path: "/nope") {} else { Issue.record("expected 404") }
    }

    /// The first route added that binds the path and fits the method wins, whether its
    /// pattern has parameters or not, and however the routes are indexed.
    @Test func routerKeepsTheOrderOfAddition() {
        func router(_ routes: [(String, String)]) -> Router {
            var router = Router()
            for (method, pattern) in routes { router.add(method, pattern, { _ in .init(status: 200) }) }
            return router
        }
        func found(_ router: Router, _ method: String, _ path: String) -> (String, [String: String])? {
            guard case .found(_, let params, let pattern) = router.match(method: method, path: path) else { return nil }
            return (pattern, params)
        }
        let exactFirst = router([("GET", "/boardings/new"), ("GET", "/boardings/:id"), ("GET", "/:section/new")])
        #expect(found(exactFirst, "GET", "/boardings/new")?.0 == "/boardings/new")
        #expect(found(exactFirst, "GET", "/boardings/7")?.1 == ["id": "7"])
        #expect(found(exactFirst, "GET", "/teams/new")?.1 == ["section": "teams"])

        let patternFirst = router([("GET", "/:section/new"), ("GET", "/boardings/:id"), ("GET", "/boardings/new")])
        #expect(found(patternFirst, "GET", "/boardings/new")?.0 == "/:section/new")
        #expect(found(patternFirst, "GET", "/boardings/new")?.1 == ["section": "boardings"])
        #expect(found(patternFirst, "GET", "/boardings/8")?.0 == "/boardings/:id")

        // A later route of another method does not hide an earlier one, and a pattern added
        // after an exact path still answers that path for its own method.
        let mixed = router([("GET", "/teams"), ("POST", "/:section"), ("PUT", "/teams")])
        #expect(found(mixed, "POST", "/teams")?.1 == ["section": "teams"])
        #expect(found(mixed, "PUT", "/teams")?.0 == "/teams")
        #expect(found(mixed, "HEAD", "/teams")?.0 == "/teams")
        guard case .wrongMethod(let allowed) = mixed.match(method: "DELETE", path: "/teams") else {
            Issue.record("expected 405")
            return
        }
        #expect(allowed == ["GET", "POST", "PUT"])
        guard case .wrongMethod(let onlyPost) = mixed.match(method: "GET", path: "/boardings") else {
            Issue.record("expected 405")
            return
        }
        #expect(onlyPost == ["POST"])
    }

    @Test func routerSplitsPathsTheSameWayHoweverSpelled() {
        var router = Router()
        router.get("/", { _ in .init(status: 200) })
        router.get("/api/v1/sync/events", { _ in .init(status: 200) })
        router.get("/api/v1/blobs/:photoId", { _ in .init(status: 200) })
        for path in ["/api/v1/sync/events", "/api/v1/sync/events/", "//api/v1//sync/events"] {
            guard case .found(_, _, let pattern) = router.match(method: "GET", path: path) else {
                Issue.record("no match for \(path)")
                continue
            }
            #expect(pattern == "/api/v1/sync/events")
        }
        if case .found(_, let params, _) = router.match(method: "GET", path: "/api/v1/blobs/p-1/") {
            #expect(params == ["photoId": "p-1"])
        } else { Issue.record("no match for a blob") }
        if case .found(_, _, let pattern) = router.match(method: "GET", path: "/") { #expect(pattern == "/") } else {
            Issue.record("no match for /")
        }
        for path in ["/api/v1/sync", "/api/v1/sync/events/more", "/api/v2/sync/events", "/api", "/:photoId"] {
            if case .found(_, _, let pattern) = router.match(method: "GET", path: path) {
                Issue.record("\(path) matched \(pattern)")
            }
        }
        if case .none = router.match(method: "POST", path: "/nope/x") {} else { Issue.record("expected 404") }
        guard case .wrongMethod(let allowed) = router.match(method: "POST", path: "/api/v1/sync/events") else {
            Issue.record("expected 405")
            return
        }
        #expect(allowed == ["GET"])
        for path in ["/a//b/", "", "/", "/café/x", "/e\u{301}/\u{301}/x", "/\r\n/x", "/%C3%A9/y"] {
            #expect(Router.segments(path) == path.split(separator: "/"))
        }
    }

    @Test func nextNeverLeavesTheSite() {
        #expect(LoginPages.safeNext("/boardings?x=1") == "/boardings?x=1")
        for bad in ["//evil.example", "https://evil.example", "/\\evil", "evil", nil, "/\r\nSet-Cookie: x=1", "/\n",
                    "/\t/evil.example", "/\u{0}x", "/ x", "/\u{7F}"] as [String?] {
            #expect(LoginPages.safeNext(bad) == "/")
        }
    }

    @Test func cookieFlags() {
        let (name, value) = Cookies.set("tw_session", "abc", maxAge: 60)
        #expect(name == "Set-Cookie")
        for flag in ["HttpOnly", "Secure", "SameSite=Lax", "Path=/", "Max-Age=60"] { #expect(value.contains(flag)) }
    }
}
