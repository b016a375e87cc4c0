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
}
