import Testing

@testable import TidewayJSON

@Suite struct JSONPointerTests {
    @Test func escapesTildeAndSlashPerRFC6901() {
        #expect(JSONPointer().description == "")
        #expect(JSONPointer().appending("crew").appending(index: 2).appending("license").description == "/crew/2/license")
        #expect(JSONPointer(["a/b", "m~n", "~1"]).description == "/a~1b/m~0n/~01")
    }

    @Test func parsesBackToTheSameSegments() {
        #expect(JSONPointer(parsing: "/a~1b/m~0n/~01")?.segments == ["a/b", "m~n", "~1"])
        #expect(JSONPointer(parsing: "")?.segments == [])
        #expect(JSONPointer(parsing: "/")?.segments == [""])
        #expect(JSONPointer(parsing: "a") == nil)
        #expect(JSONPointer(parsing: "/a~2") == nil)
    }

    @Test func findsValues() {
        let document: JSON = ["crew": [["license": "A"], ["license": "B"]], "a/b": 1]
        #expect(document[JSONPointer(parsing: "/crew/1/license")!] == "B")
        #expect(document[JSONPointer(parsing: "/a~1b")!] == 1)
        #expect(document[JSONPointer(parsing: "/crew/2")!] == nil)
        #expect(document[JSONPointer(parsing: "/crew/01")!] == nil)
    }
}
