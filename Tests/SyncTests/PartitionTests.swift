import Testing

@testable import Sync

@Suite struct PartitionTests {
    @Test func parsesTheFourKinds() {
        #expect(Partition("agency=Parque Nacional Galápagos")?.kind == .agency)
        #expect(Partition("user=5f1c0000-0000-4000-8000-000000000001")?.kind == .user)
        #expect(Partition("all-users=all-the-users")?.kind == .allUsers)
        #expect(Partition("conversation=6d2f0c1e-3b7a")?.kind == .conversation)
    }

    @Test func refusesWhatIsNotAPartition() {
        for text in ["agency=", "user=a=b", "foo", "foo=bar", "=x", "agency= Gabon", "user=not-a-uuid",
                     "user=5F1C0000-0000-4000-8000-000000000001", "all-users=everyone", "conversation=a/b",
                     "agency=" + String(repeating: "x", count: 65)] {
            #expect(Partition(text) == nil, "\(text)")
        }
    }

    @Test func collectionsLiveInOneKindOfPartition() {
        for collection in SyncCollection.allCases {
            #expect(collection.partitionKind.collections.contains(collection))
        }
    }
}
