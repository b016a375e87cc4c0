import Foundation
import Testing

@testable import TidewayJSON

@Suite struct MergePatchTests {
    /// RFC 7396 Appendix A, every row (Tests/Vectors, shared with the client's MergePatchTests).
    @Test func rfc7396AppendixA() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Vectors/merge-patch-rfc7396.json")
        let text = try String(contentsOf: url, encoding: .utf8)
        let cases = try #require(try JSON(parsing: text)["cases"]?.arrayValue)
        #expect(cases.count == 15)
        for row in cases {
            let row = try #require(row.arrayValue)
            #expect(row[0].applyingMergePatch(row[1]) == row[2], "\(row)")
        }
    }

    /// The sync case: two officers patch different fields of one report and both edits stay.
    @Test func independentPatchesBothApply() {
        let report: JSON = ["_id": "r1", "vessel": ["name": "Amani", "homePort": "Dar"], "draft": true]
        let merged = report
            .applyingMergePatch(["vessel": ["name": "Amani II"]])
            .applyingMergePatch(["draft": nil, "vessel": ["permitNumber": "P-7"]])
        #expect(merged == ["_id": "r1", "vessel": ["name": "Amani II", "homePort": "Dar", "permitNumber": "P-7"]])
    }

    /// The merged object is in the canonical order, and a key equivalent to the target's with
    /// other bytes patches that field (as the dictionaries did), keeping the target's spelling.
    @Test func mergedFieldsAreInOrderAndEquivalentKeysAreOneField() throws {
        let merged = JSON.object(["m": 1, "é": 2]).applyingMergePatch(["e\u{301}": 3, "b": 4, "z": ["y": 1, "a": 2]])
        #expect(merged.serialized() == #"{"b":4,"m":1,"z":{"a":2,"y":1},"é":3}"#)
        #expect(try JSON(parsing: merged.serialized()) == merged)
    }
}
