import Testing

@testable import Sync

/// Which pushes may skip the reads (`WritePath.applyFirstPush`, one round trip): only those
/// whose documents are the same whatever the reads would find.
@Suite struct WritePathTests {
    static func change(_ op: Change.Op, _ collection: SyncCollection, partition: String = "agency=Gabon") -> WritePath.Input {
        .success(Change(changeID: "c-\(op)-\(collection.rawValue)", collection: collection, partition: Partition(partition)!,
                        id: "d1", op: op, body: op == .delete ? nil : ["_id": "d1"]))
    }

    @Test func insertsOfNewDocumentsNeedNoReads() {
        #expect(WritePath.needsNoReads([Self.change(.insert, .reports)]))
        #expect(WritePath.needsNoReads([Self.change(.insert, .reports), Self.change(.insert, .photos)]))
        // A change refused for its shape is answered without the database.
        let refused = WritePath.Input.failure(.init(changeID: "bad", rejection: .invalid("no")))
        #expect(WritePath.needsNoReads([refused, Self.change(.insert, .reports)]))
        #expect(WritePath.needsNoReads([]))
    }

    @Test func updatesDeletesAndRuledCollectionsNeedTheirReads() {
        // The merge patch needs the stored document; a delete needs to know it exists.
        #expect(!WritePath.needsNoReads([Self.change(.insert, .reports), Self.change(.update, .reports)]))
        #expect(!WritePath.needsNoReads([Self.change(.delete, .reports)]))
        // Chat messages take their author from the caller; users' documents carry intents
        // and are never inserted by a client; server-written collections are refused.
        #expect(!WritePath.needsNoReads([Self.change(.insert, .chatMessages, partition: "conversation=c1")]))
        #expect(!WritePath.needsNoReads([Self.change(.insert, .users, partition: "user=5f1c0000-0000-4000-8000-000000000001")]))
        #expect(!WritePath.needsNoReads([Self.change(.insert, .chatsters, partition: "all-users=all-the-users")]))
    }
}
