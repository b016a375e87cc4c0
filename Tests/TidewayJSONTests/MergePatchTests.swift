import Testing

@testable import TidewayJSON

@Suite struct MergePatchTests {
    /// RFC 7396 Appendix A, every row: original, patch, result.
    @Test(arguments: [
        (#"{"a":"b"}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
        (#"{"a":"b"}"#, #"{"b":"c"}"#, #"{"a":"b","b":"c"}"#),
        (#"{"a":"b"}"#, #"{"a":null}"#, #"{}"#),
        (#"{"a":"b","b":"c"}"#, #"{"a":null}"#, #"{"b":"c"}"#),
        (#"{"a":["b"]}"#, #"{"a":"c"}"#, #"{"a":"c"}"#),
        (#"{"a":"c"}"#, #"{"a":["b"]}"#, #"{"a":["b"]}"#),
        (#"{"a":{"b":"c"}}"#, #"{"a":{"b":"d","c":null}}"#, #"{"a":{"b":"d"}}"#),
        (#"{"a":[{"b":"c"}]}"#, #"{"a":[1]}"#, #"{"a":[1]}"#),
        (#"["a","b"]"#, #"["c","d"]"#, #"["c","d"]"#),
        (#"{"a":"b"}"#, #"["c"]"#, #"["c"]"#),
        (#"{"a":"foo"}"#, "null", "null"),
        (#"{"a":"foo"}"#, #""bar""#, #""bar""#),
        (#"{"e":null}"#, #"{"a":1}"#, #"{"a":1,"e":null}"#),
        (#"[1,2]"#, #"{"a":"b","c":null}"#, #"{"a":"b"}"#),
        (#"{}"#, #"{"a":{"bb":{"ccc":null}}}"#, #"{"a":{"bb":{}}}"#),
    ])
    func rfc7396AppendixA(original: String, patch: String, expected: String) throws {
        let result = try JSON(parsing: original).applyingMergePatch(JSON(parsing: patch))
        #expect(result == (try JSON(parsing: expected)))
    }

    /// The sync case: two officers patch different fields of one report and both edits stay.
    @Test func independentPatchesBothApply() {
        let report: JSON = ["_id": "r1", "vessel": ["name": "Amani", "homePort": "Dar"], "draft": true]
        let merged = report
            .applyingMergePatch(["vessel": ["name": "Amani II"]])
            .applyingMergePatch(["draft": nil, "vessel": ["permitNumber": "P-7"]])
        #expect(merged == ["_id": "r1", "vessel": ["name": "Amani II", "homePort": "Dar", "permitNumber": "P-7"]])
    }
}
