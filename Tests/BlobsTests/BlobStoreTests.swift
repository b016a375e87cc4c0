import Foundation
import Testing

@testable import Blobs
@testable import Support

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
