import Foundation
import GRDB
import TidewayModels

/// A change waiting in the outgoing queue, as it will be pushed.
public struct QueuedChange: Sendable, Hashable, Codable {
    public var seq: Int64
    public var changeId: String
    public var partition: String
    public var collection: String
    public var id: String
    /// `insert`, `update` or `delete`
    public var op: String
    /// The whole document (insert) or the merge patch (update); nil for delete, and not loaded
    /// in a batch (`nextBatch`), whose bodies go to the wire as stored.
    public var body: JSONValue?
    /// `queued`, or `sending` while a push with it is on the way.
    public var state: String

}

/// A change the server refused: never dropped silently.
public struct Rejection: Sendable, Hashable, Codable {
    public var changeId: String
    public var partition: String
    public var collection: String
    public var id: String
    public var op: String
    public var code: String
    public var message: String
    public var path: String?
}

/// A locally stored document and its send state.
public struct StoredDocument: Sendable, Hashable {
    public var partition: String
    public var collection: String
    public var id: String
    public var doc: JSONValue
    /// `synced`, `queued` (changes wait to be sent) or `rejected` (the last change was refused).
    public var state: String
    public var rejection: Rejection?
}

/// A partition the app opened, where its pull stands.
public struct PartitionState: Sendable, Hashable, Codable {
    public var partition: String
    public var cursor: String?
    /// `open`, `forbidden` (its documents were removed), `invalid`
    public var status: String
}

/// Something the app is told about: a revocation, a reset, a rejection.
public struct Notice: Sendable, Hashable, Codable {
    public var seq: Int64
    public var kind: String
    public var partition: String?
    public var detail: String
}

/// One SQLite file per login (GRDB): the documents of the opened partitions, each partition's
/// cursor, the outgoing queue and the schema version. Every local write changes the document
/// and appends to the queue in one transaction, so a killed app loses neither.
public final class LocalStore: Sendable {
    public static let schemaVersion = 1
    let queue: DatabaseQueue

    public init(path: String) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        // WAL: one fsync per commit, and readers (another process showing the state) never
        // wait for a writer. A killed process loses no committed transaction.
        configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA journal_mode = WAL") }
        queue = try DatabaseQueue(path: path, configuration: configuration)
        try Self.migrator.migrate(queue)
    }

    /// An in-memory store (unit tests).
    public init() throws {
        queue = try DatabaseQueue()
        try Self.migrator.migrate(queue)
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                CREATE TABLE partitions (partition TEXT PRIMARY KEY, cursor TEXT, status TEXT NOT NULL DEFAULT 'open');
                -- doc: the local view (NULL: deleted here, not yet confirmed); server: the last version
                -- the server confirmed (NULL: the server has none). doc = server + the queued changes.
                CREATE TABLE documents (
                    partition TEXT NOT NULL, collection TEXT NOT NULL, id TEXT NOT NULL,
                    doc TEXT, server TEXT, state TEXT NOT NULL DEFAULT 'synced', rejection TEXT,
                    PRIMARY KEY (partition, collection, id));
                CREATE INDEX documents_by_id ON documents (collection, id);
                CREATE TABLE outbox (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT, changeId TEXT NOT NULL UNIQUE,
                    partition TEXT NOT NULL, collection TEXT NOT NULL, id TEXT NOT NULL,
                    op TEXT NOT NULL, body TEXT, state TEXT NOT NULL DEFAULT 'queued');
                CREATE INDEX outbox_by_document ON outbox (partition, collection, id);
                CREATE TABLE rejections (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT, changeId TEXT NOT NULL, partition TEXT NOT NULL,
                    collection TEXT NOT NULL, id TEXT NOT NULL, op TEXT NOT NULL,
                    code TEXT NOT NULL, message TEXT NOT NULL, path TEXT);
                -- Photos waiting to be uploaded (PUT /blobs/<id>), apart from record sync: a report
                -- syncs at once, its photos follow. The bytes wait in a file of the store's folder.
                CREATE TABLE uploads (
                    photoId TEXT PRIMARY KEY, partition TEXT NOT NULL, file TEXT NOT NULL,
                    contentType TEXT NOT NULL, bytes INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, lastError TEXT);
                CREATE TABLE notices (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, partition TEXT, detail TEXT NOT NULL);
                """)
            try db.execute(sql: "INSERT INTO meta (key, value) VALUES ('schemaVersion', ?), ('clientId', ?)",
                           arguments: [String(schemaVersion), UUID().uuidString.lowercased()])
        }
        return migrator
    }

    // MARK: meta

    public func meta(_ key: String) throws -> String? {
        try queue.read { db in try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [key]) }
    }

    public func setMeta(_ key: String, _ value: String?) throws {
        try queue.write { db in
            if let value {
                try db.execute(sql: "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                               arguments: [key, value])
            } else {
                try db.execute(sql: "DELETE FROM meta WHERE key = ?", arguments: [key])
            }
        }
    }

    /// This install's name in pushes: with `changeId`, what makes a retried change a duplicate.
    public var clientId: String { get throws { try meta("clientId") ?? "" } }

    // MARK: partitions

    public func open(partition: String) throws {
        try queue.write { db in
            try db.execute(sql: "INSERT INTO partitions (partition) VALUES (?) ON CONFLICT (partition) DO UPDATE SET status = 'open' WHERE status <> 'open'",
                           arguments: [partition])
        }
    }

    public func partitions() throws -> [PartitionState] {
        try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT partition, cursor, status FROM partitions ORDER BY partition").map {
                PartitionState(partition: $0["partition"], cursor: $0["cursor"], status: $0["status"])
            }
        }
    }

    // MARK: reading

    public func document(_ collection: String, _ id: String) throws -> StoredDocument? {
        try queue.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM documents WHERE collection = ? AND id = ? AND doc IS NOT NULL",
                             arguments: [collection, id]).map(Self.stored)
        }
    }

    public func documents(_ collection: String, partition: String? = nil) throws -> [StoredDocument] {
        try queue.read { db in
            try Row.fetchAll(db, sql: """
                SELECT * FROM documents WHERE collection = ? AND doc IS NOT NULL AND (? IS NULL OR partition = ?) ORDER BY id
                """, arguments: [collection, partition, partition]).map(Self.stored)
        }
    }

    public func count(_ collection: String? = nil, partition: String? = nil) throws -> Int {
        try queue.read { db in
            try Int.fetchOne(db, sql: """
                SELECT count(*) FROM documents WHERE doc IS NOT NULL AND (? IS NULL OR collection = ?) AND (? IS NULL OR partition = ?)
                """, arguments: [collection, collection, partition, partition]) ?? 0
        }
    }

    static func stored(_ row: Row) throws -> StoredDocument {
        let rejection: String? = row["rejection"]
        return StoredDocument(partition: row["partition"], collection: row["collection"], id: row["id"],
                              doc: try JSONValue.decode(row["doc"] as String),
                              state: row["state"],
                              rejection: try rejection.map { try JSONDecoder().decode(Rejection.self, from: Data($0.utf8)) })
    }

    public func queued(limit: Int = Int.max) throws -> [QueuedChange] {
        try queue.read { db in try Self.queued(db, limit: limit) }
    }

    static func queued(_ db: Database, limit: Int) throws -> [QueuedChange] {
        try Row.fetchAll(db, sql: "SELECT * FROM outbox ORDER BY seq LIMIT ?", arguments: [min(limit, Int(Int32.max))]).map { row in
            let body: String? = row["body"]
            return QueuedChange(seq: row["seq"], changeId: row["changeId"], partition: row["partition"],
                                collection: row["collection"], id: row["id"], op: row["op"],
                                body: try body.map { try JSONValue.decode($0) }, state: row["state"])
        }
    }

    public func pendingCount() throws -> Int {
        try queue.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM outbox") ?? 0 }
    }

    public func rejections() throws -> [Rejection] {
        try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM rejections ORDER BY seq").map {
                Rejection(changeId: $0["changeId"], partition: $0["partition"], collection: $0["collection"], id: $0["id"],
                          op: $0["op"], code: $0["code"], message: $0["message"], path: $0["path"])
            }
        }
    }

    public func notices() throws -> [Notice] {
        try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM notices ORDER BY seq").map {
                Notice(seq: $0["seq"], kind: $0["kind"], partition: $0["partition"], detail: $0["detail"])
            }
        }
    }

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
