import Foundation
import Testing

@testable import Blobs
@testable import Support

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
