import Database
import Schema
import TidewayJSON
import Web

/// The one way documents change: sync pushes and back-office forms both come here, under
/// the caller's claims, so row-level security, the schemas, the server rules and the
/// server effects (triggers) apply to every write alike.
public enum WritePath {
    /// A change as it arrived: parsed, or already refused for its shape.
    public typealias Input = Result<Change, Refused>

    public struct Refused: Error, Sendable {
        public let changeID: String
        public let rejection: ChangeRejection
    }

    public struct Limits: Sendable {
        public var documentBytes: Int
        public init(documentBytes: Int) { self.documentBytes = documentBytes }
    }

    /// Applies `inputs` in order inside `tx` and answers one result per change. Two round
    /// trips: one reads what the batch needs (earlier outcomes, current documents, locked),
    /// one sends every write — and, with `commit`, the COMMIT too (a push, whose
    /// transaction ends with its writes: one round trip fewer per push). A push of new
    /// documents only may go in one (`applyFirstPush`). `also`: the caller's own statements
    /// for the same transaction, sent after the writes (a push's presence touch).
    /// `deviceRow` false: the push leaves the device's row as it is (`DevicePushes`).
    public static func apply(
        _ inputs: [Input], clientID: String?, device: String = "", deviceRow: Bool = true, caller: CallerInfo, in tx: Transaction,
        limits: Limits, commit: Bool = false, also: [SQL] = []
    ) throws -> [JSON] {
        let changes = inputs.compactMap { try? $0.get() }
        var reads: [SQL] = []
        if let clientID {
            reads.append(pushLock(clientID: clientID))
            reads.append(.reused("""
                select change_id, result::text as result
                  from app.logged_outcomes(\(clientID), \(changes.map(\.changeID))::text[])
                """))
        }
        let byCollection = Dictionary(grouping: changes, by: \.collection)
        // Server-written collections are never written by clients (the rules refuse them), and
        // the worker may not lock them.
        let collections = byCollection.keys.filter { !$0.isWrittenByServer }.sorted { $0.rawValue < $1.rawValue }
        for collection in collections {
            let ids = Array(Set(byCollection[collection]!.map(\.id))).sorted()
            // Locked in id order, so that two batches touching the same documents cannot deadlock.
            reads.append(.reused("""
                select id, partition, doc::text as doc, version, deleted from sync.\(unsafeSQL: collection.table)
                 where id = any(\(ids)::text[]) order by id for update
                """))
        }
        // The caller's write right per (partition, collection), asked first: without it the
        // answer is `forbidden` whatever the document (an invisible document would otherwise
        // look `not_found`, and a delete or update of it would say so instead of forbidden).
        let targets = Array(Set(changes.map { Target(partition: $0.partition.description, collection: $0.collection.rawValue) }))
        if !targets.isEmpty {
            reads.append(.reused("""
                select t.p, t.c, app.can_write(t.p, t.c) as writable
                  from unnest(\(targets.map(\.partition))::text[], \(targets.map(\.collection))::text[]) as t(p, c)
                """))
        }
        let readResults = reads.isEmpty ? [] : try tx.queries(reads)

        var earlier: [String: JSON] = [:]
        var offset = 0
        if clientID != nil {
            for row in readResults[1].rows {
                if let id = row["change_id"], let text = row["result"] { earlier[id] = try JSON(parsing: text) }
            }
            offset = 2
        }
        var current: [DocumentKey: StoredDocument] = [:]
        for (index, collection) in collections.enumerated() {
            for row in readResults[offset + index].rows {
                guard let id = row["id"], let partition = row["partition"] else { continue }
                let doc = try row["doc"].map { try JSON(parsing: $0, limits: .storedDocuments(documentBytes: limits.documentBytes)) }
                current[DocumentKey(collection: collection, id: id)] = StoredDocument(
                    partition: partition, doc: row.bool("deleted") == true ? nil : doc, version: row.int64("version") ?? 0)
            }
        }
        var writable: Set<Target> = []
        if !targets.isEmpty {
            for row in readResults[offset + collections.count].rows where row.bool("writable") == true {
                writable.insert(Target(partition: row["p"] ?? "", collection: row["c"] ?? ""))
            }
        }
        let plan = try plan(inputs, clientID: clientID, device: deviceRow ? device : nil, earlier: earlier, current: current,
                            writable: { writable.contains($0) }, caller: caller, limits: limits)
        // `also` after the writes: its results follow theirs, which `answers` reads by index.
        let statements = plan.finished() + also
        let written = statements.isEmpty ? [] : try tx.queries(statements, thenCommit: commit)
        return try plan.answers(written)
    }

    /// Whether a push can skip the reads: every change it parsed inserts into a collection
    /// whose stored document is the one sent, whatever the reads find (no server rule reads
    /// the stored document or the caller, no intents); app.apply_change and
    /// app.insert_documents answer an id that exists already.
    public static func needsNoReads(_ inputs: [Input]) -> Bool {
        inputs.allSatisfy { input in
            guard case .success(let change) = input else { return true }
            return change.op == .insert && Plan.gathered.contains(change.collection) && change.collection != .chatMessages
        }
    }

    /// The reads would have changed the answer (a retry of changes already in the push log,
    /// or a partition the caller may not write), or a write was refused (`isRefusal`):
    /// nothing was written; `apply` the push in a new transaction.
    public struct NeedsReads: Error {}

    /// A push that `needsNoReads` in one round trip with its COMMIT: `app.open_first_push`
    /// (the push's lock, then `app.expect_first_push`, which fails the transaction — TW409,
    /// thrown as `NeedsReads` — unless the reads would find no earlier outcome and every
    /// write right; the device for the history and the device's row), then the writes as
    /// `apply` plans them for ids found nowhere, without savepoints (`Plan.oneTrip`). When
    /// the writes are one statement, that statement opens the push (`Plan.finished(opening:)`).
    public static func applyFirstPush(
        _ inputs: [Input], clientID: String, device: String, deviceRow: Bool = true, caller: CallerInfo, in tx: Transaction,
        limits: Limits, also: [SQL] = []
    ) throws -> [JSON] {
        precondition(needsNoReads(inputs), "applyFirstPush of a push that needs its reads")
        let changes = inputs.compactMap { try? $0.get() }
        let targets = Array(Set(changes.map { Target(partition: $0.partition.description, collection: $0.collection.rawValue) }))
        let plan = try plan(inputs, clientID: clientID, device: device, earlier: [:], current: [:],
                            writable: { _ in true }, caller: caller, limits: limits, oneTrip: true)
        let opening = Plan.Opening(appVersion: device, deviceRow: deviceRow, changeIDs: changes.map(\.changeID),
                                   partitions: targets.map(\.partition), collections: targets.map(\.collection))
        do {
            let written = try tx.queries(plan.finished(opening: opening) + also, thenCommit: true)
            return try plan.answers(written, opening: opening)
        } catch let error as DatabaseError where error.sqlState == "TW409" || isRefusal(error.sqlState) {
            throw NeedsReads()
        }
    }

    /// What `app.insert_documents` answers change by change when a savepoint guards its
    /// INSERT (a rule, the write right, a bad value): in one round trip, where nothing
    /// guards it, such an error aborts the push, and the usual way gives the answers.
    static func isRefusal(_ sqlState: String?) -> Bool {
        guard let sqlState else { return false }
        return ["42501", "23514", "23502", "TW403", "TW404", "TW422"].contains(sqlState) || sqlState.hasPrefix("22")
    }

    /// One push per (user, client) at a time: a retry sent while the first attempt is still
    /// running waits for it, then finds its outcomes in the log (read after the lock, in a
    /// fresh READ COMMITTED snapshot) instead of writing everything again.
    static func pushLock(clientID: String) -> SQL {
        .reused("select app.push_lock(\(clientID))")
    }

    /// The write round trip's statements for `inputs`, given what the reads found; `device`
    /// nil: the device's row is left as it is.
    private static func plan(
        _ inputs: [Input], clientID: String?, device: String?, earlier: [String: JSON], current: [DocumentKey: StoredDocument],
        writable: (Target) -> Bool, caller: CallerInfo, limits: Limits, oneTrip: Bool = false
    ) throws -> Plan {
        var current = current
        var plan = Plan(clientID: clientID, oneTrip: oneTrip)
        var seenInBatch: Set<String> = []
        for input in inputs {
            switch input {
            case .failure(let refused):
                plan.reject(refused.rejection, changeID: refused.changeID)
            case .success(let change):
                if let first = earlier[change.changeID] {
                    plan.answer(duplicate(of: first, changeID: change.changeID))
                    continue
                }
                guard seenInBatch.insert(change.changeID).inserted else {
                    plan.reject(.invalid("changeId repeated in this batch"), changeID: change.changeID, log: false)
                    continue
                }
                guard writable(Target(partition: change.partition.description, collection: change.collection.rawValue)) else {
                    plan.reject(.forbidden("no write right on this partition"), changeID: change.changeID)
                    continue
                }
                let key = DocumentKey(collection: change.collection, id: change.id)
                let stored = current[key]
                // A Result rather than a typed catch: the latter crashes the 6.3 compiler here.
                switch Result(catching: { () throws(ChangeRejection) in try prepare(change, stored: stored, caller: caller, limits: limits) }) {
                case .success(let prepared):
                    // Intents rewrite the user's own document first: its version is the server's then.
                    let expected = change.op == .insert || !prepared.intents.isEmpty ? nil : stored?.version
                    plan.write(change, document: prepared.serialized, intents: prepared.intents, expectedVersion: expected,
                               isNew: stored == nil)
                    current[key] = StoredDocument(
                        partition: change.partition.description, doc: prepared.document, version: (stored?.version ?? 0) + 1)
                case .failure(let rejection):
                    plan.reject(rejection, changeID: change.changeID)
                }
            }
        }
        // In one round trip, app.open_first_push has written the device's row already.
        if let clientID, let device, !oneTrip {
            plan.append(.reused("select app.note_device_push(\(clientID), \(device))"))
        }
        return plan
    }

    /// The document to store for a change, after the merge, the schema and the server's
    /// rules; nil for a delete.
    static func prepare(_ change: Change, stored: StoredDocument?, caller: CallerInfo, limits: Limits) throws(ChangeRejection) -> Prepared {
        let live = stored?.doc != nil && stored?.partition == change.partition.description
        var proposed: JSON?
        switch change.op {
        case .insert:
            proposed = change.body
        case .update:
            guard live, let doc = stored?.doc, let patch = change.body else {
                throw ChangeRejection(code: .notFound, message: "no such document in this partition", path: nil)
            }
            proposed = doc.applyingMergePatch(patch)
        case .delete:
            guard live else { throw ChangeRejection(code: .notFound, message: "no such document in this partition", path: nil) }
            proposed = nil
        }
        var prepared = try ServerRules.check(change, current: live ? stored?.doc : nil, proposed: proposed, caller: caller)
        guard let document = prepared.document else { return prepared }
        let checked: JSON
        switch CollectionSchemas.validate(collection: change.collection.rawValue, document: document) {
        case .success(let normalized): checked = normalized
        case .failure(let violation):
            throw .invalid("\(change.collection.rawValue) \(violation.path): \(violation.message)", path: violation.path)
        }
        let serialized = checked.serializedBytes()
        if serialized.count > limits.documentBytes {
            throw ChangeRejection(code: .tooLarge, message: "the document is larger than \(limits.documentBytes) bytes", path: nil)
        }
        prepared.document = checked
        prepared.serialized = serialized
        return prepared
    }

    static func duplicate(of first: JSON, changeID: String) -> JSON {
        guard first["status"]?.stringValue == "applied" else { return first }
        return ["changeId": .string(changeID), "status": "duplicate", "version": first["version"] ?? .null]
    }

    struct Target: Hashable {
        let partition: String
        let collection: String
    }

    struct DocumentKey: Hashable {
        let collection: SyncCollection
        let id: String
    }

    struct StoredDocument {
        let partition: String
        let doc: JSON?
        let version: Int64
    }
}
