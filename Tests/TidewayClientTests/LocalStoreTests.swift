import Foundation
import Testing
import TidewayClient
import TidewayModels

/// The store and its outgoing queue, without a server: pushes and pulls are simulated by
/// handing the store the answers the contract describes.
@Suite struct LocalStoreTests {
    let partition = "agency=Gabon"

    func report(_ id: String, vessel: String = "Amani", port: String = "Libreville") -> JSONValue {
        ["_id": .string(id), "timestamp": "2026-01-01T00:00:00Z", "vessel": ["name": .string(vessel), "homePort": .string(port)]]
    }

    func applied(_ change: QueuedChange) -> JSONValue {
        ["changeId": .string(change.changeId), "status": "applied", "version": "v"]
    }

    @Test func aWriteChangesTheDocumentAndQueuesItInOrder() throws {
        let store = try LocalStore()
        let insert = try #require(try store.insert(report("r1"), collection: "reports", partition: partition))
        let update = try #require(try store.modify("reports", "r1") { doc in
            doc = MergePatch.apply(["vessel": ["name": "Bahari"]], to: doc)
        })
        let delete = try store.delete("reports", "r1")
        #expect(insert.op == "insert" && update.op == "update" && delete.op == "delete")
        #expect(update.body == ["vessel": ["name": "Bahari"]])
        #expect(Set([insert.changeId, update.changeId, delete.changeId]).count == 3)
        #expect(try store.queued().map(\.changeId) == [insert.changeId, update.changeId, delete.changeId])
        #expect(try store.document("reports", "r1") == nil)
        // An edit that changes nothing queues nothing.
        try store.insert(report("r2"), collection: "reports", partition: partition)
        #expect(try store.modify("reports", "r2") { _ in } == nil)
        #expect(try store.pendingCount() == 4)
    }

    @Test func batchesKeepOrderAndLimits() throws {
        let store = try LocalStore()
        for i in 0..<25 { try store.insert(report("r\(i)"), collection: "reports", partition: partition) }
        let first = try store.nextBatch(limit: 10)
        #expect(first.map(\.id) == (0..<10).map { "r\($0)" })
        #expect(try store.queued().filter { $0.state == "sending" }.count == 10)
        // No answer (the network dropped it): the same changes, same ids, go again.
        try store.requeue()
        #expect(try store.nextBatch(limit: 10).map(\.changeId) == first.map(\.changeId))
        // A byte limit cuts a batch but never leaves it empty.
        #expect(try store.nextBatch(limit: 1000, maxBytes: 1).count == 1)
    }

    /// A change of the user's own document (which may create a conversation) ends its push:
    /// the messages to that conversation go in the next one.
    @Test func aUsersChangeEndsItsBatch() throws {
        let store = try LocalStore()
        try store.apply(changes: [["collection": "users", "id": "u1", "op": "upsert", "doc": ["_id": "u1", "conversations": []]]],
                        partition: "user=u1", cursor: nil)
        try store.insert(report("r0"), collection: "reports", partition: partition)
        try store.modify("users", "u1") { doc in doc = MergePatch.apply(["conversations": [["id": "c1"]]], to: doc) }
        try store.insert(["_id": "m1", "text": "hi"], collection: "chatMessages", partition: "conversation=c1")
        #expect(try store.nextBatch(limit: 10).map(\.collection) == ["reports", "users"])
    }

    @Test func appliedAndDuplicateLeaveTheQueue() throws {
        let store = try LocalStore()
        let a = try #require(try store.insert(report("a"), collection: "reports", partition: partition))
        let b = try #require(try store.insert(report("b"), collection: "reports", partition: partition))
        let batch = try store.nextBatch(limit: 10)
        let rejections = try store.record(results: [applied(a), ["changeId": .string(b.changeId), "status": "duplicate"]], for: batch)
        #expect(rejections.isEmpty)
        #expect(try store.pendingCount() == 0)
        #expect(try store.document("reports", "a")?.state == "synced")
    }

    @Test func aRejectionRestoresTheServersVersionAndIsKept() throws {
        let store = try LocalStore()
        try store.apply(changes: [["collection": "reports", "id": "r1", "op": "upsert", "doc": report("r1")]],
                        partition: partition, cursor: "c:1")
        let change = try #require(try store.modify("reports", "r1") { doc in
            doc = MergePatch.apply(["vessel": ["name": 42]], to: doc)
        })
        #expect(try store.document("reports", "r1")?.doc["vessel"]?["name"] == 42)
        let batch = try store.nextBatch(limit: 10)
        let rejections = try store.record(results: [[
            "changeId": .string(change.changeId), "status": "rejected",
            "error": ["code": "invalid", "message": "reports.vessel.name: expected string", "path": "/vessel/name"]]], for: batch)
        #expect(rejections.map(\.code) == ["invalid"])
        #expect(rejections.first?.path == "/vessel/name")
        let stored = try #require(try store.document("reports", "r1"))
        #expect(stored.doc == report("r1"))
        #expect(stored.state == "rejected")
        #expect(stored.rejection?.message == "reports.vessel.name: expected string")
        #expect(try store.rejections().count == 1)
        #expect(try store.pendingCount() == 0)
    }

    @Test func aRejectedInsertRemovesTheLocalDocument() throws {
        let store = try LocalStore()
        let change = try #require(try store.insert(report("x"), collection: "reports", partition: partition))
        let batch = try store.nextBatch(limit: 10)
        _ = try store.record(results: [["changeId": .string(change.changeId), "status": "rejected",
                                        "error": ["code": "forbidden", "message": "no"]]], for: batch)
        #expect(try store.document("reports", "x") == nil)
        #expect(try store.rejections().map(\.id) == ["x"])
    }

    /// A pull that brings the server's edit of one field keeps the device's unsent edit of another.
    @Test func aPullKeepsUnsentEditsOnTop() throws {
        let store = try LocalStore()
        try store.apply(changes: [["collection": "reports", "id": "r1", "op": "upsert", "doc": report("r1")]],
                        partition: partition, cursor: "c:1")
        try store.modify("reports", "r1") { doc in doc = MergePatch.apply(["vessel": ["name": "Device"]], to: doc) }
        try store.apply(changes: [["collection": "reports", "id": "r1", "op": "upsert",
                                   "doc": report("r1", vessel: "Amani", port: "Office")]], partition: partition, cursor: "c:2")
        let stored = try #require(try store.document("reports", "r1"))
        #expect(stored.doc["vessel"] == ["name": "Device", "homePort": "Office"])
        #expect(stored.state == "queued")
        #expect(try store.partitions().isEmpty)  // cursors are kept only for opened partitions
        try store.open(partition: partition)
        try store.apply(changes: [], partition: partition, cursor: "c:3")
        #expect(try store.partitions().map(\.cursor) == ["c:3"])
    }

    @Test func forbiddenDropsThePartitionAndTellsTheApp() throws {
        let store = try LocalStore()
        try store.open(partition: partition)
        try store.open(partition: "agency=WildAid")
        try store.apply(changes: [["collection": "reports", "id": "r1", "op": "upsert", "doc": report("r1")]],
                        partition: partition, cursor: "c:1")
        try store.insert(report("w1"), collection: "reports", partition: "agency=WildAid")
        try store.insert(report("g2"), collection: "reports", partition: partition)
        try store.forbid(partition: partition)
        #expect(try store.count("reports", partition: partition) == 0)
        #expect(try store.count("reports", partition: "agency=WildAid") == 1)
        #expect(try store.queued().map(\.id) == ["w1"])
        #expect(try store.rejections().map(\.id) == ["g2"])
        #expect(try store.notices().map(\.kind) == ["forbidden"])
        #expect(try store.partitions().first { $0.partition == partition }?.status == "forbidden")
    }

    @Test func resetKeepsUnsentChanges() throws {
        let store = try LocalStore()
        try store.open(partition: partition)
        try store.apply(changes: [["collection": "reports", "id": "old", "op": "upsert", "doc": report("old")],
                                  ["collection": "reports", "id": "edited", "op": "upsert", "doc": report("edited")]],
                        partition: partition, cursor: "c:1")
        try store.insert(report("new"), collection: "reports", partition: partition)
        try store.modify("reports", "edited") { doc in doc = MergePatch.apply(["vessel": ["name": "Kept"]], to: doc) }
        try store.reset(partition: partition)
        #expect(try store.partitions().first?.cursor == nil)
        #expect(try store.document("reports", "old") == nil)
        #expect(try store.document("reports", "new") != nil)
        #expect(try store.pendingCount() == 2)
        // The re-pull brings the server's state back; the unsent edit stays on top.
        try store.apply(changes: [["collection": "reports", "id": "old", "op": "upsert", "doc": report("old")],
                                  ["collection": "reports", "id": "edited", "op": "upsert", "doc": report("edited", port: "Server")]],
                        partition: partition, cursor: "c:9")
        #expect(try store.document("reports", "edited")?.doc["vessel"] == ["name": "Kept", "homePort": "Server"])
        #expect(try store.count("reports") == 3)
    }

    /// A killed app: the queue, marked sending, is all there when the file is opened again.
    @Test func theQueueSurvivesAReopen() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tideway-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        var ids: [String] = []
        do {
            let store = try LocalStore(path: path)
            for i in 0..<5 { ids.append(try store.insert(report("r\(i)"), collection: "reports", partition: partition)!.changeId) }
            _ = try store.nextBatch(limit: 3)
        }
        let reopened = try LocalStore(path: path)
        #expect(try reopened.queued().map(\.changeId) == ids)
        #expect(try reopened.meta("schemaVersion") == String(LocalStore.schemaVersion))
    }

    @Test func tokensAreOwnerOnly() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tokens-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let store = FileTokenStore(path: path)
        let tokens = Tokens(accessToken: "a", refreshToken: "r",
                            user: AccountUser(id: "u", email: "e@x", displayName: nil, agency: "Gabon", role: "officer"))
        try store.save(tokens)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(try store.load() == tokens)
        try store.clear()
        #expect(try store.load() == nil)
    }

    /// An event's carried changes apply only at the cursor they start from (`after`); a
    /// second copy, or an event for a cursor the store does not hold, changes nothing.
    @Test func carriedChangesApplyOnlyAtTheirAfterCursor() throws {
        let store = try LocalStore()
        try store.open(partition: partition)
        try store.apply(changes: [], partition: partition, cursor: "c:one")
        let changes: [JSONValue] = [["collection": "reports", "id": "r1", "op": "upsert", "doc": report("r1")]]
        #expect(try !store.apply(carried: changes, partition: partition, after: "c:zero", cursor: "c:two"))
        #expect(try store.document("reports", "r1") == nil)
        #expect(try store.apply(carried: changes, partition: partition, after: "c:one", cursor: "c:two"))
        #expect(try store.document("reports", "r1") != nil)
        #expect(try store.partitions().first { $0.partition == partition }?.cursor == "c:two")
        // The same event again: the cursor moved on, so it is not applied twice.
        let deleted: [JSONValue] = [["collection": "reports", "id": "r1", "op": "delete"]]
        #expect(try !store.apply(carried: deleted, partition: partition, after: "c:one", cursor: "c:two"))
        #expect(try store.document("reports", "r1") != nil)
    }
}
