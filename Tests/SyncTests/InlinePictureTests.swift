import Foundation
import Testing

@testable import Sync
@testable import TidewayJSON

@Suite struct InlinePictureTests {
    let limit = 16

    func change(_ collection: String, _ doc: JSON) -> JSON {
        ["changeId": "c", "collection": .string(collection), "partition": "agency=Gabon", "id": "p", "op": "insert", "doc": doc]
    }

    @Test func allowsLongPicturesOfPhotosOnly() throws {
        let long = JSON.string(String(repeating: "A", count: 20))
        try InlinePictures.checkStrings(of: change("photos", ["picture": long]), limit: limit, documentLimit: 64)
        #expect(throws: ChangeRejection.self) { try InlinePictures.checkStrings(of: change("photos", ["thumbNail": long]), limit: limit, documentLimit: 64) }
        #expect(throws: ChangeRejection.self) { try InlinePictures.checkStrings(of: change("reports", ["picture": long]), limit: limit, documentLimit: 64) }
        #expect(throws: ChangeRejection.self) {
            try InlinePictures.checkStrings(of: change("photos", ["x": ["picture": long]]), limit: limit, documentLimit: 64)
        }
    }

    @Test func aStringLongerThanADocumentIsTooLargeNotInvalid() {
        let huge = JSON.string(String(repeating: "A", count: 65))
        for doc: JSON in [["notes": huge], ["picture": huge]] {
            do {
                try InlinePictures.checkStrings(of: change("photos", doc), limit: limit, documentLimit: 64)
                Issue.record("expected a rejection")
            } catch {
                #expect(error.code == .tooLarge)
            }
        }
    }

    @Test func aRejectionNamesTheStringByItsJSONPointer() {
        let long = JSON.string(String(repeating: "A", count: 20))
        do {
            try InlinePictures.checkStrings(of: change("reports", ["a/b": ["short", ["c~d": long]], "e": "f"]), limit: limit, documentLimit: 64)
            Issue.record("expected a rejection")
        } catch {
            #expect(error.code == .invalid)
            #expect(error.path == "/doc/a~1b/1/c~0d")
        }
        do {
            try InlinePictures.checkStrings(of: change("photos", ["picture": .string(String(repeating: "A", count: 65))]),
                                            limit: limit, documentLimit: 64)
            Issue.record("expected a rejection")
        } catch {
            #expect(error.code == .tooLarge)
            #expect(error.path == "/doc/picture")
        }
    }

    /// A body no longer than the limits holds no string or key `checkStrings` refuses (a
    /// string's text is never shorter than what it decodes to), so the push skips the walk;
    /// a longer one is walked.
    @Test func aBodyUnderTheLimitsNeedsNoWalk() throws {
        let texts = [
            #"{"changeId":"c","collection":"reports","partition":"agency=Gabon","id":"p","op":"insert","doc":{"n":"AAAAAAAAAAAAAAAA"}}"#,
            #"{"changeId":"c","op":"insert","doc":{"n":"\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9"}}"#,
            #"{"changeId":"c","doc":{"AAAAAAAAAAAAAAAAA":1}}"#,
        ]
        for text in texts {
            let value = try JSON(parsing: text)
            let bodyBytes = text.utf8.count
            for limit in [bodyBytes - 1, bodyBytes, bodyBytes + 1] {
                let walked = Result { () throws(ChangeRejection) in
                    try InlinePictures.checkStrings(of: value, limit: limit, documentLimit: bodyBytes)
                }
                if !InlinePictures.mayRefuse(bodyBytes: bodyBytes, limit: limit, documentLimit: bodyBytes) {
                    #expect(throws: Never.self) { try walked.get() }
                }
            }
            #expect(InlinePictures.mayRefuse(bodyBytes: bodyBytes, limit: bodyBytes - 1, documentLimit: .max))
            #expect(InlinePictures.mayRefuse(bodyBytes: bodyBytes, limit: .max, documentLimit: bodyBytes - 1))
            #expect(!InlinePictures.mayRefuse(bodyBytes: bodyBytes, limit: bodyBytes, documentLimit: bodyBytes))
        }
        // The walk does refuse the first text at 16 bytes (its body is longer: walked).
        #expect(throws: ChangeRejection.self) { try InlinePictures.checkStrings(of: try JSON(parsing: texts[0]), limit: 15, documentLimit: 64) }
    }
}
