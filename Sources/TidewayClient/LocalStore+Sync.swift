import Foundation
import GRDB
import TidewayModels

/// What the sync loop asks of the store: the next push and its answers, the pulled changes,
/// and a partition's state when the server refuses or resets it.
extension LocalStore {
    // MARK: push

    /// The next changes to push, oldest first, within the contract's limits (1,000 changes,
    /// a 16 MiB body: we stay under `maxBytes`), ending after a `users` change. They are
    /// marked `sending`.
    public func nextBatch(limit: Int, maxBytes: Int = 8 << 20) throws -> [QueuedChange] {
        try nextPush(limit: limit, maxBytes: maxBytes).changes
    }

    /// The next batch and its push body's `changes` array as JSON text (the stored bodies as
    /// they are: no decoding and encoding again of every document).
    func nextPush(limit: Int, maxBytes: Int = 8 << 20) throws -> (changes: [QueuedChange], wire: String) {
        try queue.write { db in
            var batch: [QueuedChange] = []
            var texts: [String] = []
            var bytes = 0
            let rows = try Row.fetchAll(db, sql: "SELECT * FROM outbox ORDER BY seq LIMIT ?", arguments: [min(limit, Int(Int32.max))])
            for row in rows {
                let body: String? = row["body"]
                let op: String = row["op"]
                func quoted(_ column: String) -> String { JSONValue.string(row[column]).text() }
                var text = #"{"changeId":"# + quoted("changeId") + #","collection":"# + quoted("collection")
                    + #","partition":"# + quoted("partition") + #","id":"# + quoted("id") + #","op":"# + quoted("op")
                if let body { text += (op == "insert" ? #","doc":"# : #","patch":"#) + body }
                text += "}"
                let change = QueuedChange(seq: row["seq"], changeId: row["changeId"], partition: row["partition"],
                                          collection: row["collection"], id: row["id"], op: op,
                                          body: nil, state: row["state"])
                let size = text.utf8.count
                if !batch.isEmpty && bytes + size > maxBytes { break }
                batch.append(change)
                texts.append(text)
                bytes += size
                // A change to the user's own document can grant partitions (creating a
                // conversation); the server decides a push's rights when it starts, so what
                // follows goes in the next push.
                if change.collection == "users" { break }
            }
            if let last = batch.last {
                try db.execute(sql: "UPDATE outbox SET state = 'sending' WHERE seq <= ?", arguments: [last.seq])
            }
            return (batch, "[" + texts.joined(separator: ",") + "]")
        }
    }

    /// Applies the push's per-change results: `applied` and `duplicate` leave the queue and
    /// become the server's version; `rejected` leaves the queue, restores the server's version
    /// (with any later queued change replayed) and is recorded as a rejection.
    public func record(results: [JSONValue], for batch: [QueuedChange]) throws -> [Rejection] {
        try queue.write { db in
            var rejected: [Rejection] = []
            let byId = Dictionary(batch.map { ($0.changeId, $0) }, uniquingKeysWith: { first, _ in first })
            for result in results {
                guard let changeId = result["changeId"]?.stringValue, let change = byId[changeId] else { continue }
                let status = result["status"]?.stringValue ?? ""
                let bodyText = try String.fetchOne(db, sql: "SELECT body FROM outbox WHERE changeId = ?", arguments: [changeId])
                try db.execute(sql: "DELETE FROM outbox WHERE changeId = ?", arguments: [changeId])
                let key: [(any DatabaseValueConvertible)?] = [change.partition, change.collection, change.id]
                if status == "applied" || status == "duplicate" {
                    let remaining = try Int.fetchOne(db, sql: "SELECT count(*) FROM outbox WHERE partition = ? AND collection = ? AND id = ?",
                                                     arguments: StatementArguments(key)) ?? 0
                    if remaining == 0 {
                        // The local view is what the server now has: server = doc.
                        if change.op == "delete" {
                            try db.execute(sql: "DELETE FROM documents WHERE partition = ? AND collection = ? AND id = ?",
                                           arguments: StatementArguments(key))
                        } else {
                            try db.execute(sql: "UPDATE documents SET server = doc, state = 'synced', rejection = NULL WHERE partition = ? AND collection = ? AND id = ?",
                                           arguments: StatementArguments(key))
                        }
                        continue
                    }
                    let body = try bodyText.map { try JSONValue.decode($0) }
                    let serverText = try String.fetchOne(db, sql: "SELECT server FROM documents WHERE partition = ? AND collection = ? AND id = ?",
                                                         arguments: StatementArguments(key))
                    let server = try serverText.map { try JSONValue.decode($0) }
                    let confirmed: JSONValue?
                    switch change.op {
                    case "insert": confirmed = body
                    case "update": confirmed = MergePatch.apply(body ?? .object([:]), to: server ?? .object([:]))
                    default: confirmed = nil
                    }
                    try db.execute(sql: "UPDATE documents SET server = ? WHERE partition = ? AND collection = ? AND id = ?",
                                   arguments: StatementArguments([confirmed?.text()] + key))
                    try Self.rebuild(db, change.partition, change.collection, change.id)
                } else {
                    let error = result["error"]
                    let rejection = Rejection(changeId: changeId, partition: change.partition, collection: change.collection,
                                              id: change.id, op: change.op,
                                              code: error?["code"]?.stringValue ?? "rejected",
                                              message: error?["message"]?.stringValue ?? "",
                                              path: error?["path"]?.stringValue)
                    try db.execute(sql: "INSERT INTO rejections (changeId, partition, collection, id, op, code, message, path) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                   arguments: [changeId, change.partition, change.collection, change.id, change.op,
                                               rejection.code, rejection.message, rejection.path])
                    try Self.rebuild(db, change.partition, change.collection, change.id, rejection: rejection)
                    rejected.append(rejection)
                }
            }
            try db.execute(sql: "UPDATE outbox SET state = 'queued' WHERE state = 'sending'")
            return rejected
        }
    }

    /// A push that got no answer: its changes are queued again, unchanged (same changeIds).
    public func requeue() throws {
        try queue.write { db in try db.execute(sql: "UPDATE outbox SET state = 'queued' WHERE state = 'sending'") }
    }

    // MARK: pull

    /// One page of a partition's pull, with its new cursor, in one transaction.
    public func apply(changes: [JSONValue], partition: String, cursor: String?) throws {
        try queue.write { db in try Self.apply(db, changes: changes, partition: partition, cursor: cursor) }
    }

    /// The changes an event carries (sync-protocol.md, "Change events"), applied as a pull's
    /// page only while the partition's cursor is still `after` (checked in the same
    /// transaction, so a pull that moved it meanwhile wins); false when nothing was applied
    /// and the client must pull instead.
    public func apply(carried changes: [JSONValue], partition: String, after: String, cursor: String) throws -> Bool {
        try queue.write { db in
            let held = try Row.fetchOne(db, sql: "SELECT cursor, status FROM partitions WHERE partition = ?", arguments: [partition])
            guard let held, held["status"] as String == "open", held["cursor"] as String? == after else { return false }
            try Self.apply(db, changes: changes, partition: partition, cursor: cursor)
            return true
        }
    }

    private static func apply(_ db: Database, changes: [JSONValue], partition: String, cursor: String?) throws {
        // Documents with queued changes get the server's version with those replayed on top;
        // the others (nearly all) are one statement each.
        var pending = Set<String>()
        for row in try Row.fetchAll(db, sql: "SELECT DISTINCT collection, id FROM outbox WHERE partition = ?", arguments: [partition]) {
            pending.insert((row["collection"] as String) + "\u{0}" + (row["id"] as String))
        }
        let upsert = try db.cachedStatement(sql: """
            INSERT INTO documents (partition, collection, id, doc, server, state) VALUES (?, ?, ?, ?, ?, 'synced')
            ON CONFLICT (partition, collection, id) DO UPDATE
            SET doc = excluded.doc, server = excluded.server, state = 'synced', rejection = NULL
            """)
        let remove = try db.cachedStatement(sql: "DELETE FROM documents WHERE partition = ? AND collection = ? AND id = ?")
        let setServer = try db.cachedStatement(sql: """
            INSERT INTO documents (partition, collection, id, server) VALUES (?, ?, ?, ?)
            ON CONFLICT (partition, collection, id) DO UPDATE SET server = excluded.server
            """)
        for change in changes {
            guard let collection = change["collection"]?.stringValue, let id = change["id"]?.stringValue else { continue }
            let text = change["op"]?.stringValue == "delete" ? nil : change["doc"]?.text()
            if pending.contains(collection + "\u{0}" + id) {
                try setServer.execute(arguments: [partition, collection, id, text])
                try Self.rebuild(db, partition, collection, id)
            } else if let text {
                try upsert.execute(arguments: [partition, collection, id, text, text])
            } else {
                try remove.execute(arguments: [partition, collection, id])
            }
        }
        try db.execute(sql: "UPDATE partitions SET cursor = ?, status = 'open' WHERE partition = ?", arguments: [cursor, partition])
    }

    /// Revocation: the partition's documents and queued changes go, and the app is told.
    public func forbid(partition: String) throws {
        try queue.write { db in
            let documents = try Int.fetchOne(db, sql: "SELECT count(*) FROM documents WHERE partition = ?", arguments: [partition]) ?? 0
            let dropped = try Self.queued(db, limit: Int.max).filter { $0.partition == partition }
            for change in dropped {
                try db.execute(sql: "INSERT INTO rejections (changeId, partition, collection, id, op, code, message) VALUES (?, ?, ?, ?, ?, 'forbidden', 'the partition was revoked before this change was sent')",
                               arguments: [change.changeId, partition, change.collection, change.id, change.op])
            }
            try db.execute(sql: "DELETE FROM outbox WHERE partition = ?", arguments: [partition])
            try db.execute(sql: "DELETE FROM documents WHERE partition = ?", arguments: [partition])
            try db.execute(sql: "DELETE FROM uploads WHERE partition = ?", arguments: [partition])
            try db.execute(sql: "UPDATE partitions SET status = 'forbidden', cursor = NULL WHERE partition = ?", arguments: [partition])
            try db.execute(sql: "INSERT INTO notices (kind, partition, detail) VALUES ('forbidden', ?, ?)",
                           arguments: [partition, "access revoked: \(documents) local documents and \(dropped.count) unsent changes removed"])
        }
    }

    /// Compaction: the server no longer knows our cursor. Our copy of the partition is dropped,
    /// except what queued changes make of it; the pull starts again from the beginning.
    public func reset(partition: String) throws {
        try queue.write { db in
            try db.execute(sql: "UPDATE documents SET server = NULL WHERE partition = ?", arguments: [partition])
            let keys = try Row.fetchAll(db, sql: "SELECT collection, id FROM documents WHERE partition = ?", arguments: [partition])
            for key in keys { try Self.rebuild(db, partition, key["collection"], key["id"]) }
            try db.execute(sql: "UPDATE partitions SET cursor = NULL WHERE partition = ?", arguments: [partition])
            let kept = try Int.fetchOne(db, sql: "SELECT count(*) FROM outbox WHERE partition = ?", arguments: [partition]) ?? 0
            try db.execute(sql: "INSERT INTO notices (kind, partition, detail) VALUES ('reset', ?, ?)",
                           arguments: [partition, "re-pulled from the beginning; \(kept) unsent changes kept"])
        }
    }

    public func notice(kind: String, partition: String?, detail: String) throws {
        try queue.write { db in
            try db.execute(sql: "INSERT INTO notices (kind, partition, detail) VALUES (?, ?, ?)", arguments: [kind, partition, detail])
        }
    }

    public func markInvalid(partition: String) throws {
        try queue.write { db in
            try db.execute(sql: "UPDATE partitions SET status = 'invalid' WHERE partition = ?", arguments: [partition])
        }
    }

    /// Everything of this login, for a logout that clears local data.
    public func wipe() throws {
        try queue.write { db in
            for table in ["documents", "outbox", "rejections", "notices", "partitions", "uploads"] {
                try db.execute(sql: "DELETE FROM \(table)")
            }
        }
    }
}
