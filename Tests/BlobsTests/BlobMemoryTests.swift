import Testing

@testable import Blobs

/// What a worker remembers of photos for downloads answered from memory (`BlobMemory`):
/// only under the token cache's generation it was answered in, and nothing a fill read
/// before that generation moved.
@Suite struct BlobMemoryTests {
    let blob = BlobMemory.Blob(partition: "agency=Gabon", sha256: String(repeating: "a", count: 64),
                               contentType: "image/jpeg", bytes: 5000)

    @Test func rememberedUnderItsGenerationOnly() {
        let memory = BlobMemory()
        memory.fill("p1", blob, since: 3, current: 3)
        #expect(memory.blob("p1", generation: 3) == blob)
        #expect(memory.blob("p2", generation: 3) == nil, "another photo")
        #expect(memory.blob("p1", generation: 4) == nil, "the cache was emptied since")
    }

    @Test func aFillThatBeganBeforeAnInvalidationIsDropped() {
        let memory = BlobMemory()
        memory.fill("p1", blob, since: 3, current: 4)
        #expect(memory.blob("p1", generation: 4) == nil)
        #expect(memory.blob("p1", generation: 3) == nil)
        // A newer generation's fill forgets the older entries; an older one cannot come back.
        memory.fill("p1", blob, since: 3, current: 3)
        memory.fill("p2", blob, since: 5, current: 5)
        memory.fill("p1", blob, since: 3, current: 3)
        #expect(memory.blob("p1", generation: 5) == nil)
        #expect(memory.blob("p2", generation: 5) == blob)
    }

    @Test func beyondCapacityItStartsAgain() {
        let memory = BlobMemory(capacity: 2)
        memory.fill("p1", blob, since: 1, current: 1)
        memory.fill("p2", blob, since: 1, current: 1)
        memory.fill("p3", blob, since: 1, current: 1)
        #expect(memory.blob("p1", generation: 1) == nil)
        #expect(memory.blob("p3", generation: 1) == blob)
    }
}
