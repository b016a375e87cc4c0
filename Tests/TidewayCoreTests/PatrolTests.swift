import Foundation
import Testing

@testable import TidewayCore

@Suite struct ImageTypeTests {
    @Test func recognizesEachFormatByItsFirstBytes() {
        #expect(ImageType.sniff([0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10]) == .jpeg)
        #expect(ImageType.sniff([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0x0D]) == .png)
        #expect(ImageType.sniff(Array("RIFF".utf8) + [0x24, 0, 0, 0] + Array("WEBPVP8 ".utf8)) == .webp)
    }

    @Test func refusesLookalikesAndShortHeads() {
        #expect(ImageType.sniff([0xFF, 0xD8]) == nil)  // too short for JPEG's three bytes
        #expect(ImageType.sniff(Array("RIFF".utf8) + [0x24, 0, 0, 0] + Array("WAVE".utf8)) == nil)  // a WAV file
        #expect(ImageType.sniff(Array("GIF89a".utf8)) == nil)
        #expect(ImageType.sniff([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x00]) == nil)
        #expect(ImageType.sniff([]) == nil)
    }

    @Test func readsContentTypeHeaders() {
        #expect(ImageType(contentType: "image/JPEG; charset=binary") == .jpeg)
        #expect(ImageType(contentType: "image/webp") == .webp)
        #expect(ImageType(contentType: "image/gif") == nil)
        #expect(ImageType(contentType: "application/octet-stream") == nil)
    }
}

@Suite struct HistoryChainTests {
    func entry(_ id: Int64, version: Int64, change: String, prev: String) -> HistoryChain.Entry {
        var e = HistoryChain.Entry(id: id, reportID: "r1", partition: "agency=Gabon", seq: 6 + version, version: version,
                                   userID: "", device: "dev-1", at: "2026-01-02T03:04:05.000006Z", op: "update",
                                   change: change, prevHash: prev, hash: "")
        e.hash = HistoryChain.hash(of: e, prevHash: prev)
        return e
    }

    @Test func canonicalFormPrefixesEveryFieldWithItsByteLength() {
        let e = HistoryChain.Entry(id: 1, reportID: "r1", partition: "agency=Gabon", seq: 7, version: 1, userID: "",
                                   device: "dev-1", at: "2026-01-02T03:04:05.000006Z", op: "insert",
                                   change: #"{"a": 1, "é": "x"}"#, prevHash: "", hash: "")
        let text = String(decoding: HistoryChain.canonicalBytes(of: e, prevHash: ""), as: UTF8.self)
        #expect(text == "25:tideway-report-history-v1\n0:\n2:r1\n12:agency=Gabon\n1:7\n1:1\n0:\n5:dev-1\n"
            + "27:2026-01-02T03:04:05.000006Z\n6:insert\n19:{\"a\": 1, \"é\": \"x\"}\n")
        // Computed independently (Python's hashlib over the same bytes).
        #expect(HistoryChain.hash(of: e, prevHash: "") == "ee9f61e9c71382151671b3d573b8b8d3d3629df83a7a0e11921ae8ebeca0a97e")
    }

    @Test func fieldBoundariesCannotBeShifted() {
        var a = entry(1, version: 1, change: "{}", prev: "")
        var b = a
        a.reportID = "r1\n"
        a.partition = "agency=Gabon"
        b.reportID = "r1"
        b.partition = "\nagency=Gabon"
        #expect(HistoryChain.hash(of: a, prevHash: "") != HistoryChain.hash(of: b, prevHash: ""))
    }

    @Test func anIntactChainHolds() {
        let first = entry(1, version: 1, change: #"{"x": 1}"#, prev: "")
        let second = entry(2, version: 2, change: #"{"x": 2}"#, prev: first.hash)
        #expect(HistoryChain.check([first, second], currentVersion: 2) == nil)
    }

    @Test func namesTheFirstAlteredEntry() {
        let first = entry(1, version: 1, change: #"{"x": 1}"#, prev: "")
        var second = entry(2, version: 2, change: #"{"x": 2}"#, prev: first.hash)
        let third = entry(3, version: 3, change: #"{"x": 3}"#, prev: second.hash)
        second.change = #"{"x": 9}"#
        let broken = HistoryChain.check([first, second, third], currentVersion: 3)
        #expect(broken?.entryID == 2)
        #expect(broken?.reason.contains("altered") == true)
    }

    @Test func findsARemovedEntryInTheMiddleAndAtTheEnd() {
        let first = entry(1, version: 1, change: "{}", prev: "")
        let second = entry(2, version: 2, change: "{}", prev: first.hash)
        let third = entry(3, version: 3, change: "{}", prev: second.hash)
        #expect(HistoryChain.check([first, third], currentVersion: 3)?.entryID == 3)
        #expect(HistoryChain.check([first, second], currentVersion: 3)?.reason.contains("version 3") == true)
    }

    @Test func findsARecomputedHashThatNoLongerLinks() {
        // Rewriting an entry and its own hash still breaks the link of the entry after it.
        let first = entry(1, version: 1, change: "{}", prev: "")
        let second = entry(2, version: 2, change: "{}", prev: first.hash)
        let forged = entry(1, version: 1, change: #"{"forged": true}"#, prev: "")
        #expect(HistoryChain.check([forged, second], currentVersion: 2)?.entryID == 2)
    }
}

@Suite struct BlobStoreTests {
    func temporaryRoot() -> String {
        NSTemporaryDirectory() + "tideway-blobs-" + Crypto.hex(Crypto.randomBytes(6))
    }

    @Test func storesByContentOnceAndHashesWhileWriting() throws {
        let store = BlobStore(root: temporaryRoot())
        defer { try? FileManager.default.removeItem(atPath: store.root) }
        let bytes: [UInt8] = [0xFF, 0xD8, 0xFF] + Array(repeating: 7, count: 100_000)
        let (sha, upload) = try store.store(bytes, limit: 1 << 20)
        #expect(sha == Crypto.hex(Crypto.sha256(bytes)))
        #expect(upload.head == Array(bytes.prefix(ImageType.sniffLength)))
        try store.place(upload, sha: sha)
        #expect(store.path(sha: sha).hasSuffix("/\(sha.prefix(2))/\(sha.dropFirst(2).prefix(2))/\(sha)"))
        #expect(FileManager.default.contents(atPath: store.path(sha: sha)) == Data(bytes))
        let (again, second) = try store.store(bytes, limit: 1 << 20)
        try store.place(second, sha: again)
        #expect(store.allBlobs() == [sha])
        #expect((try FileManager.default.contentsOfDirectory(atPath: store.root + "/tmp")).isEmpty)
        #expect(store.remove(sha: sha))
        #expect(store.allBlobs().isEmpty)
    }

    @Test func refusesMoreThanTheLimitAndLeavesNoFile() throws {
        let store = BlobStore(root: temporaryRoot())
        defer { try? FileManager.default.removeItem(atPath: store.root) }
        #expect(throws: BlobStore.Failure.tooLarge) { _ = try store.store(Array(repeating: 1, count: 11), limit: 10) }
        #expect((try FileManager.default.contentsOfDirectory(atPath: store.root + "/tmp")).isEmpty)
    }

    @Test func ifNoneMatchComparesStrongAndWeakTags() {
        #expect(BlobRoutes.matches(#""abc""#, etag: #""abc""#))
        #expect(BlobRoutes.matches(#""x", W/"abc""#, etag: #""abc""#))
        #expect(BlobRoutes.matches("*", etag: #""abc""#))
        #expect(!BlobRoutes.matches(#""abcd""#, etag: #""abc""#))
    }

    @Test func pictureURLEscapesThePhotoID() {
        #expect(BlobRoutes.pictureURL(photoID: "5f1c") == "/api/v1/blobs/5f1c")
        #expect(BlobRoutes.pictureURL(photoID: "a/b c") == "/api/v1/blobs/a%2Fb%20c")
    }
}

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
}

@Suite struct PatrolSchemaTests {
    @Test(arguments: [("At Sea", "On Duty"), ("On Land", "Off Duty"), ("On Duty", "On Duty"), ("Off Duty", "Off Duty")])
    func normalizesDutyStatus(written: String, stored: String) throws {
        let doc: JSON = ["_id": "d1", "user": ["email": "a@b.c"], "date": "2026-01-01T08:00:00Z", "status": .string(written)]
        let normalized = try CollectionSchemas.validate(collection: "dutyChanges", document: doc).get()
        #expect(normalized["status"] == .string(stored))
    }

    @Test func refusesAnUnknownDutyStatus() {
        let doc: JSON = ["_id": "d1", "user": ["email": "a@b.c"], "date": "2026-01-01T08:00:00Z", "status": "Napping"]
        #expect((try? CollectionSchemas.validate(collection: "dutyChanges", document: doc).get()) == nil)
    }

    func mpa(_ ring: [[Double]]) -> JSON {
        ["_id": "m1", "name": "Reserve", "coordinates": .array(ring.map { .array($0.map(JSON.double)) })]
    }

    @Test func acceptsAClosedRingOfFourPoints() throws {
        _ = try CollectionSchemas.validate(collection: "mpas", document: mpa([[0, 0], [1, 0], [1, 1], [0, 0]])).get()
    }

    @Test(arguments: [
        [[0.0, 0.0], [1, 0], [1, 1], [0, 1]],  // not closed
        [[0.0, 0.0], [1, 0], [0, 0]],  // closed but three points
        [[0.0, 0.0], [1, 0], [1, 1], [200, 0], [0, 0]],  // a longitude out of range
    ])
    func refusesBadRings(ring: [[Double]]) {
        #expect((try? CollectionSchemas.validate(collection: "mpas", document: mpa(ring)).get()) == nil)
    }
}

@Suite struct BlobPlacementTests {
    @Test func placingTheSameUploadTwiceIsHarmless() throws {
        let store = BlobStore(root: NSTemporaryDirectory() + "tideway-blobs-" + Crypto.hex(Crypto.randomBytes(6)))
        defer { try? FileManager.default.removeItem(atPath: store.root) }
        let bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47] + Array(repeating: 1, count: 1000)
        let (sha, upload) = try store.store(bytes, limit: 1 << 20)
        try store.place(upload, sha: sha)
        try store.place(upload, sha: sha)  // as a retried transaction does
        #expect(store.allBlobs() == [sha])
        store.remove(sha: sha)
        #expect(throws: BlobStore.Failure.self) { try store.place(upload, sha: sha) }  // gone on both sides
    }
}
