import Testing
import Foundation
import TidewayModels

@Suite struct MergePatchTests {
    /// RFC 7396 Appendix A, every row (Tests/Vectors, shared with the server's MergePatchTests).
    @Test func rfc7396AppendixA() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Vectors/merge-patch-rfc7396.json")
        let data = try Data(contentsOf: url)
        let cases = try #require(try JSONValue.decode(data)["cases"]?.arrayValue)
        #expect(cases.count == 15)
        for row in cases {
            let row = try #require(row.arrayValue)
            #expect(MergePatch.apply(row[1], to: row[0]) == row[2], "\(row)")
        }
    }

    /// The patch of an edit carries the changed fields only: what makes a concurrent edit of
    /// another field survive on the server.
    @Test func diffCarriesOnlyChangedFields() throws {
        let old = try JSONValue.decode(#"{"_id":"r1","vessel":{"name":"Amani","homePort":"Zanzibar"},"crew":[{"name":"a"}],"draft":true}"#)
        let new = try JSONValue.decode(#"{"_id":"r1","vessel":{"name":"Bahari","homePort":"Zanzibar"},"crew":[{"name":"a"}],"notes":[]}"#)
        let patch = try #require(MergePatch.diff(from: old, to: new))
        #expect(patch == (try JSONValue.decode(#"{"vessel":{"name":"Bahari"},"notes":[],"draft":null}"#)))
        #expect(MergePatch.diff(from: old, to: old) == nil)
    }

    /// Applying the diff gives the new document back, for every pair of a small corpus.
    @Test func diffThenApplyRoundTrips() throws {
        let corpus = [
            #"{"a":1}"#, #"{"a":2,"b":{"c":[1,2]}}"#, #"{"b":{"c":[1,2],"d":"x"}}"#, #"{}"#,
            #"{"a":{"b":{"c":true}},"z":1.5}"#, #"{"a":{"b":{"c":false,"d":"e"}}}"#, #"{"a":"s","b":{}}"#,
        ].map { try! JSONValue.decode($0) }
        for old in corpus {
            for new in corpus {
                let patch = MergePatch.diff(from: old, to: new)
                #expect(patch.map { MergePatch.apply($0, to: old) } ?? old == new, "\(old.text()) -> \(new.text())")
            }
        }
    }

    @Test func integersStayIntegers() throws {
        #expect(try JSONValue.decode(#"{"n":3,"w":2.5}"#).text() == #"{"n":3,"w":2.5}"#)
    }
}

@Suite struct JSONTextTests {
    @Test(arguments: [
        #"{"a":[1,-2,3.5,1e-05,true,false,null],"b":{"c":"d"},"e":""}"#,
        #"["\u00e9\ud83d\ude00\n\t\"\\/"]"#,
        #"  {"k" : [ ] , "l":{}}  "#,
    ])
    func readsWhatFoundationReads(text: String) throws {
        let mine = try JSONValue.decode(text)
        let foundation = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(mine == foundation)
        #expect(try JSONValue.decode(mine.text()) == mine)
    }

    @Test(arguments: ["", "{", #"{"a":}"#, "[1,]", "tru", #""\x""#, "01x", "{} {}", #""a"#, "-"])
    func refusesWhatIsNotJSON(text: String) {
        #expect(throws: (any Error).self) { try JSONValue.decode(text) }
    }

    @Test func writesEscapesAndSortedKeys() throws {
        let value: JSONValue = ["b": "line\nquote\"", "a": .double(2.5), "c": .int(3)]
        #expect(value.text() == #"{"a":2.5,"b":"line\nquote\"","c":3}"#)
    }
}
