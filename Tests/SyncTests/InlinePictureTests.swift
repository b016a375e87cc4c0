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
}
