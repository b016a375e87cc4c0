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

    /// A lone new document: through app.apply_change (its savepoint answers a refusal) the
    /// usual way, through app.insert_documents without a savepoint in one round trip.
    @Test func oneTripInsertsWithoutSavepoints() throws {
        guard case .success(let change) = Self.change(.insert, .reports) else { return }
        for oneTrip in [false, true] {
            var plan = WritePath.Plan(clientID: "c1", oneTrip: oneTrip)
            plan.write(change, document: Array(#"{"_id":"d1"}"#.utf8), intents: [], expectedVersion: nil, isNew: true)
            let write = try #require(plan.finished().last).description
            #expect(write.contains("app.insert_documents") == oneTrip, "\(write)")
            #expect(write.contains("app.apply_change") == !oneTrip, "\(write)")
        }
    }

    /// In one round trip, app.open_first_push names the device and writes its row before the
    /// writes: the plan sends only the writes. The usual way names the device itself.
    @Test func oneTripLeavesTheDeviceToItsOpeningStatement() throws {
        guard case .success(let change) = Self.change(.insert, .reports) else { return }
        for oneTrip in [false, true] {
            var plan = WritePath.Plan(clientID: "c1", oneTrip: oneTrip)
            plan.write(change, document: Array(#"{"_id":"d1"}"#.utf8), intents: [], expectedVersion: nil, isNew: true)
            let statements = plan.finished().map(\.description)
            #expect(statements.count == (oneTrip ? 1 : 2), "\(statements)")
            #expect(statements.contains { $0.contains("tideway.device") } == !oneTrip, "\(statements)")
        }
    }

    /// Plans of a push in one round trip: one report (`alone`), and a report and a photo (`mixed`).
    static func oneTripPlans() -> (alone: WritePath.Plan, mixed: WritePath.Plan) {
        var alone = WritePath.Plan(clientID: "client", oneTrip: true)
        var mixed = WritePath.Plan(clientID: "client", oneTrip: true)
        for (index, collection) in [SyncCollection.reports, .photos].enumerated() {
            let change = Change(changeID: "c\(index)", collection: collection, partition: Partition("agency=Gabon")!,
                                id: "d\(index)", op: .insert, body: ["_id": .string("d\(index)")])
            let document = Array(#"{"_id":"d\#(index)"}"#.utf8)
            if index == 0 {
                alone.write(change, document: document, intents: [], expectedVersion: nil, isNew: true)
            }
            mixed.write(change, document: document, intents: [], expectedVersion: nil, isNew: true)
        }
        return (alone, mixed)
    }

    /// A push in one round trip is opened (app.open_first_push: the lock, the push-log check,
    /// the device) by its writes' own statement when they are one collection's new documents,
    /// one statement fewer (docs/performance/round-16.md, "What a lone push's SQL adds
    /// to its INSERT"); by a statement of its own before them otherwise, for every change id.
    @Test func theOpeningGoesInTheWritesWhenTheyAreOneStatement() throws {
        let opening = WritePath.Plan.Opening(appVersion: "7.1", changeIDs: ["c0", "c1"], partitions: ["agency=Gabon"],
                                             collections: ["reports"])
        let (alone, mixed) = Self.oneTripPlans()
        let one = alone.finished(opening: opening)
        #expect(one.count == 1)
        #expect(one[0].description.contains("app.insert_documents") && one[0].binds.contains("7.1"), "\(one)")
        #expect(!one[0].description.contains("app.open_first_push"))

        let three = mixed.finished(opening: opening)
        #expect(three.count == 3)
        #expect(three[0].description.contains("app.open_first_push"), "\(three)")
        #expect(three[0].binds.contains("7.1") && three[0].binds.contains(#"{"c0","c1"}"#), "\(three[0].binds)")
        #expect(three.dropFirst().allSatisfy { $0.description.contains("app.insert_documents") && !$0.binds.contains("7.1") })
        // Without an opening (the usual way, or a plan alone) the writes open nothing.
        #expect(mixed.finished().count == 2)
        #expect(!alone.finished()[0].binds.contains("7.1"))
    }

    /// A push within the minute of its device's last on this worker (`DevicePushes`) opens
    /// without the device's row: `device_row` false, in the writes' statement or in
    /// app.open_first_push's own; true otherwise, and for a plan without an opening.
    @Test func theOpeningSaysWhetherTheDeviceRowIsWritten() throws {
        for deviceRow in [true, false] {
            var opening = WritePath.Plan.Opening(appVersion: "7.1", changeIDs: ["c0", "c1"], partitions: ["agency=Gabon"],
                                                 collections: ["reports"])
            opening.deviceRow = deviceRow
            let (alone, mixed) = Self.oneTripPlans()
            let flag = deviceRow ? "t" : "f"
            let one = try #require(alone.finished(opening: opening).first)
            #expect(one.description.contains("device_row =>") && one.binds.last == flag, "\(one.binds)")
            let three = mixed.finished(opening: opening)
            #expect(three[0].description.contains("app.open_first_push") && three[0].binds.last == flag, "\(three[0].binds)")
            #expect(three.dropFirst().allSatisfy { $0.binds.last == "t" })
            #expect(alone.finished()[0].binds.last == "t")
        }
    }

    /// New documents of one collection go as one JSON array parameter, written from their
    /// bytes in the order they came (docs/performance/round-13.md, "The worker's CPU per push,
    /// thirteenth round"); documents of another collection get a statement of their own.
    @Test func newDocumentsGoAsOneJSONArray() throws {
        var plan = WritePath.Plan(clientID: "c1", oneTrip: true)
        for (index, collection) in [SyncCollection.reports, .reports, .photos, .reports].enumerated() {
            let change = Change(changeID: "c\(index)", collection: collection, partition: Partition("agency=Gabon")!,
                                id: "d\(index)", op: .insert, body: ["_id": .string("d\(index)")])
            plan.write(change, document: Array(#"{"_id":"d\#(index)","é":"\"x\""}"#.utf8), intents: [],
                       expectedVersion: nil, isNew: true)
        }
        let statements = plan.finished()
        #expect(statements.count == 2)
        #expect(statements[0].binds.contains(#"[{"_id":"d0","é":"\"x\""},{"_id":"d1","é":"\"x\""},{"_id":"d3","é":"\"x\""}]"#))
        #expect(statements[1].binds.contains(#"[{"_id":"d2","é":"\"x\""}]"#))
    }

    /// What falls back to the usual way from a push in one round trip: the refusals the
    /// savepoint of app.insert_documents answers change by change, not other errors.
    @Test func refusalsAreWhatTheGuardedInsertAnswers() {
        for state in ["42501", "23514", "23502", "22P02", "22001", "TW403", "TW404", "TW422"] {
            #expect(WritePath.isRefusal(state), "\(state)")
        }
        for state in ["23505", "40001", "40P01", "57014", "XX000", "TW409"] as [String?] + [nil] {
            #expect(!WritePath.isRefusal(state), "\(String(describing: state))")
        }
    }
}
