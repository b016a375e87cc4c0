import Foundation
import GRDB
import TidewayModels

/// The app's own writes: each changes the document and appends to the outgoing queue in one
/// transaction, so a killed app loses neither; photos wait for their upload beside them.
extension LocalStore {
    // MARK: local writes: the document and the queue in one transaction

    /// Inserts a document (its `_id` is its id). Inserting an id held locally is an update of it.
    @discardableResult
    public func insert(_ doc: JSONValue, collection: String, partition: String) throws -> QueuedChange? {
        guard let id = doc["_id"]?.stringValue else { throw TidewayError.local("a document needs a string _id") }
        return try queue.write { db in
            if let old = try Self.local(db, partition, collection, id) {
                return try Self.enqueueUpdate(db, partition, collection, id, old: old, new: doc)
            }
            return try Self.enqueue(db, partition, collection, id, op: "insert", body: doc)
        }
    }

    /// Replaces the local document with `new` and queues the merge patch of what changed.
    /// nil when nothing changed (nothing is queued).
    @discardableResult
    public func update(_ collection: String, _ id: String, to new: JSONValue) throws -> QueuedChange? {
        try queue.write { db in
            guard let (partition, old) = try Self.locate(db, collection, id) else {
                throw TidewayError.local("no local \(collection) \(id)")
            }
            return try Self.enqueueUpdate(db, partition, collection, id, old: old, new: new)
        }
    }

    /// Changes the local document by a function of it (read and write in one transaction).
    @discardableResult
    public func modify(_ collection: String, _ id: String, _ change: (inout JSONValue) throws -> Void) throws -> QueuedChange? {
        try queue.write { db in
            guard let (partition, old) = try Self.locate(db, collection, id) else {
                throw TidewayError.local("no local \(collection) \(id)")
            }
            var new = old
            try change(&new)
            return try Self.enqueueUpdate(db, partition, collection, id, old: old, new: new)
        }
    }

    @discardableResult
    public func delete(_ collection: String, _ id: String) throws -> QueuedChange {
        try queue.write { db in
            guard let (partition, _) = try Self.locate(db, collection, id) else {
                throw TidewayError.local("no local \(collection) \(id)")
            }
            return try Self.enqueue(db, partition, collection, id, op: "delete", body: nil)
        }
    }

    private static func locate(_ db: Database, _ collection: String, _ id: String) throws -> (String, JSONValue)? {
        guard let row = try Row.fetchOne(db, sql: "SELECT partition, doc FROM documents WHERE collection = ? AND id = ? AND doc IS NOT NULL",
                                         arguments: [collection, id]) else { return nil }
        return (row["partition"], try JSONValue.decode(row["doc"] as String))
    }

    private static func local(_ db: Database, _ partition: String, _ collection: String, _ id: String) throws -> JSONValue? {
        try String.fetchOne(db, sql: "SELECT doc FROM documents WHERE partition = ? AND collection = ? AND id = ?",
                            arguments: [partition, collection, id]).map { try JSONValue.decode($0) }
    }

    private static func enqueueUpdate(_ db: Database, _ partition: String, _ collection: String, _ id: String,
                                      old: JSONValue, new: JSONValue) throws -> QueuedChange? {
        if new["_id"] != old["_id"] { throw TidewayError.local("_id cannot change") }
        guard let patch = MergePatch.diff(from: old, to: new) else { return nil }
        return try enqueue(db, partition, collection, id, op: "update", body: patch)
    }

    private static func enqueue(_ db: Database, _ partition: String, _ collection: String, _ id: String,
                                op: String, body: JSONValue?) throws -> QueuedChange {
        let changeId = UUID().uuidString.lowercased()
        try db.execute(sql: "INSERT INTO outbox (changeId, partition, collection, id, op, body) VALUES (?, ?, ?, ?, ?, ?)",
                       arguments: [changeId, partition, collection, id, op, body?.text()])
        try db.execute(sql: "INSERT INTO documents (partition, collection, id) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                       arguments: [partition, collection, id])
        try rebuild(db, partition, collection, id)
        return QueuedChange(seq: db.lastInsertedRowID, changeId: changeId, partition: partition, collection: collection,
                            id: id, op: op, body: body, state: "queued")
    }

    /// The local view = the server's version with every queued change of the document replayed.
    static func rebuild(_ db: Database, _ partition: String, _ collection: String, _ id: String,
                        rejection: Rejection? = nil) throws {
        guard let row = try Row.fetchOne(db, sql: "SELECT server, state, rejection FROM documents WHERE partition = ? AND collection = ? AND id = ?",
                                         arguments: [partition, collection, id]) else { return }
        let serverText: String? = row["server"]
        var doc = try serverText.map { try JSONValue.decode($0) }
        let pending = try Row.fetchAll(db, sql: "SELECT op, body FROM outbox WHERE partition = ? AND collection = ? AND id = ? ORDER BY seq",
                                       arguments: [partition, collection, id])
        for change in pending {
            let body = try (change["body"] as String?).map { try JSONValue.decode($0) }
            switch change["op"] as String {
            case "insert": doc = body
            case "update": doc = doc.map { MergePatch.apply(body ?? .object([:]), to: $0) }
            default: doc = nil
            }
        }
        if doc == nil && serverText == nil && pending.isEmpty {
            try db.execute(sql: "DELETE FROM documents WHERE partition = ? AND collection = ? AND id = ?",
                           arguments: [partition, collection, id])
            return
        }
        var state: String = pending.isEmpty ? "synced" : "queued"
        var rejectionText: String? = pending.isEmpty ? nil : row["rejection"]
        if let rejection {
            state = pending.isEmpty ? "rejected" : "queued"
            rejectionText = String(decoding: try JSONEncoder().encode(rejection), as: UTF8.self)
        } else if pending.isEmpty, (row["state"] as String) == "rejected" {
            state = "rejected"
            rejectionText = row["rejection"]
        }
        try db.execute(sql: "UPDATE documents SET doc = ?, state = ?, rejection = ? WHERE partition = ? AND collection = ? AND id = ?",
                       arguments: [doc?.text(), state, rejectionText, partition, collection, id])
    }

    // MARK: photos

    /// Inserts a photo document and queues its upload, in one transaction. `file` holds the
    /// bytes already (in the store's folder: it must outlive the app being killed).
    @discardableResult
    public func insertPhoto(_ doc: JSONValue, partition: String, file: String, contentType: String, bytes: Int) throws -> QueuedChange? {
        guard let id = doc["_id"]?.stringValue else { throw TidewayError.local("a photo needs a string _id") }
        return try queue.write { db in
            try db.execute(sql: "INSERT INTO uploads (photoId, partition, file, contentType, bytes) VALUES (?, ?, ?, ?, ?)",
                           arguments: [id, partition, file, contentType, bytes])
            return try Self.enqueue(db, partition, "photos", id, op: "insert", body: doc)
        }
    }

    public struct Upload: Sendable, Hashable, Codable {
        public var photoId: String
        public var partition: String
        public var file: String
        public var contentType: String
        public var bytes: Int
        public var attempts: Int
        public var lastError: String?
    }

    /// Uploads whose photo document the server has (its queued changes are all sent).
    public func readyUploads() throws -> [Upload] {
        try queue.read { db in
            try Row.fetchAll(db, sql: """
                SELECT * FROM uploads u WHERE NOT EXISTS (
                    SELECT 1 FROM outbox o WHERE o.collection = 'photos' AND o.id = u.photoId AND o.partition = u.partition)
                ORDER BY rowid
                """).map(Self.upload)
        }
    }

    public func uploads() throws -> [Upload] {
        try queue.read { db in try Row.fetchAll(db, sql: "SELECT * FROM uploads ORDER BY rowid").map(Self.upload) }
    }

    private static func upload(_ row: Row) -> Upload {
        Upload(photoId: row["photoId"], partition: row["partition"], file: row["file"], contentType: row["contentType"],
               bytes: row["bytes"], attempts: row["attempts"], lastError: row["lastError"])
    }

    /// The upload is done (or can never be): it leaves the queue.
    public func finishUpload(_ photoId: String) throws {
        try queue.write { db in try db.execute(sql: "DELETE FROM uploads WHERE photoId = ?", arguments: [photoId]) }
    }

    public func failUpload(_ photoId: String, error: String) throws {
        try queue.write { db in
            try db.execute(sql: "UPDATE uploads SET attempts = attempts + 1, lastError = ? WHERE photoId = ?", arguments: [error, photoId])
        }
    }
}
