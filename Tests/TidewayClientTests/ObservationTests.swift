import Foundation
import Testing
import TidewayClient
import TidewayModels

@Suite struct ObservationTests {
    /// A list observing a collection sees the state now, then each local write and each
    /// confirmation by the server, with the send state of every document.
    @Test func aCollectionIsObservedWithSendStates() async throws {
        let store = try LocalStore()
        var updates = store.observe("reports", partition: "agency=Gabon").makeAsyncIterator()
        #expect(try await updates.next()?.isEmpty == true)
        let change = try #require(try store.insert(["_id": "r1", "timestamp": "2026-01-01T00:00:00Z"],
                                                   collection: "reports", partition: "agency=Gabon"))
        let queued = try #require(try await updates.next())
        #expect(queued.map(\.id) == ["r1"] && queued.first?.state == "queued")
        let batch = try store.nextBatch(limit: 10)
        _ = try store.record(results: [["changeId": .string(change.changeId), "status": "applied"]], for: batch)
        let synced = try #require(try await updates.next())
        #expect(synced.first?.state == "synced")
    }

    @Test func aQueryOnlySeesItsDocuments() async throws {
        let store = try LocalStore()
        let drafts = store.observe("reports") { $0.doc["draft"] == true }
        var updates = drafts.makeAsyncIterator()
        #expect(try await updates.next()?.isEmpty == true)
        try store.insert(["_id": "a", "draft": false], collection: "reports", partition: "agency=Gabon")
        try store.insert(["_id": "b", "draft": true], collection: "reports", partition: "agency=Gabon")
        var seen = try #require(try await updates.next())
        if seen.isEmpty { seen = try #require(try await updates.next()) }
        #expect(seen.map(\.id) == ["b"])
    }

    @Test func theSyncStateFollowsTheQueue() async throws {
        let store = try LocalStore()
        var states = store.observeSyncState().makeAsyncIterator()
        let first = try #require(try await states.next())
        #expect(first.pendingChanges == 0 && first.online)
        try store.insert(["_id": "a"], collection: "reports", partition: "agency=Gabon")
        #expect(try await states.next()?.pendingChanges == 1)
        try store.setMeta("offline", "1")
        #expect(try await states.next()?.online == false)
    }
}
