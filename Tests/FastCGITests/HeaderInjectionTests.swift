import FastCGI
import Testing

/// Issue 20, defect 1: no header with CR, LF or NUL (or a name that is not a token) is ever
/// written; FastCGIServer answers 500 in its place.
@Suite struct HeaderInjectionTests {
    @Test func ordinaryHeadersPass() {
        let response = HTTPResponse(status: 303, headers: [("Location", "/boardings?x=1&y=%0D"), ("Set-Cookie", "a=b; Path=/")])
        #expect(response.unsafeHeader() == nil)
    }

    @Test func controlCharactersInValuesOrBadNamesAreCaught() {
        for (name, value) in [("Location", "/\r\nSet-Cookie: x=1"), ("Location", "/\n"), ("Location", "/\r"),
                              ("X-A", "a\u{0}b"), ("Bad Name", "v"), ("Bad:Name", "v"), ("", "v"), ("X\r\nY", "v")] {
            #expect(HTTPResponse(status: 200, headers: [(name, value)]).unsafeHeader() != nil, "\(name.debugDescription)")
        }
    }
}
