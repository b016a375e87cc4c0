import Foundation
import GRDB
import TidewayModels

/// The sync state an app shows: online or not, what waits to be sent, when the last sync
/// succeeded and what went wrong last.
public struct SyncState: Sendable, Hashable, Codable {
    public var online: Bool
    public var pendingChanges: Int
    public var sendingChanges: Int
    public var pendingPhotos: Int
    public var rejections: Int
    public var lastSync: String?
    public var lastError: String?
}

extension LocalStore {
    /// The documents of a collection (optionally one partition, optionally filtered: a query),
    /// now and after every change that touches them: what a Realm notification gave a
    /// SwiftUI list. Each element carries its send state (queued, synced, rejected and why).
    public func observe(_ collection: String, partition: String? = nil,
                        where include: @escaping @Sendable (StoredDocument) -> Bool = { _ in true })
        -> AsyncThrowingStream<[StoredDocument], any Error> {
        let observation = ValueObservation.tracking { db in
            try Row.fetchAll(db, sql: """
                SELECT * FROM documents WHERE collection = ? AND doc IS NOT NULL AND (? IS NULL OR partition = ?) ORDER BY id
                """, arguments: [collection, partition, partition]).map(LocalStore.stored).filter(include)
        }.removeDuplicates()
        return Self.stream(observation.values(in: queue))
    }

    /// The sync state now and after every change of it.
    public func observeSyncState() -> AsyncThrowingStream<SyncState, any Error> {
        let observation = ValueObservation.tracking { db in try LocalStore.syncState(db) }.removeDuplicates()
        return Self.stream(observation.values(in: queue))
    }

    public func syncState() throws -> SyncState {
        try queue.read { db in try Self.syncState(db) }
    }

    static func syncState(_ db: Database) throws -> SyncState {
        func meta(_ key: String) throws -> String? {
            try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [key])
        }
        return SyncState(
            online: try meta("offline") != "1",
            pendingChanges: try Int.fetchOne(db, sql: "SELECT count(*) FROM outbox") ?? 0,
            sendingChanges: try Int.fetchOne(db, sql: "SELECT count(*) FROM outbox WHERE state = 'sending'") ?? 0,
            pendingPhotos: try Int.fetchOne(db, sql: "SELECT count(*) FROM uploads") ?? 0,
            rejections: try Int.fetchOne(db, sql: "SELECT count(*) FROM rejections") ?? 0,
            lastSync: try meta("lastSync"), lastError: try meta("lastError"))
    }

    private static func stream<S: AsyncSequence & Sendable>(_ values: S) -> AsyncThrowingStream<S.Element, any Error>
    where S.Element: Sendable {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for try await value in values { continuation.yield(value) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
