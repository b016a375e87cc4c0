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
