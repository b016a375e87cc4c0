import Database
import Foundation
import Support
import Web

/// Presence (domain.md effect 5): a user who synced in the last 60 s is On-Line. Syncing
/// touches the user's presence at most every `interval` seconds per worker process: a pull
/// in a small transaction of its own (pulls are read-only), a push in the push's
/// transaction; a sweep turns idle users Off-Line.
public final class Presence: Sendable {
    /// When each login (by its token's hash) last touched presence here. In shards: every
    /// sync request of every thread comes through, and one lock was contended; read-write
    /// locks, since a login's requests only read it but once every `interval` (one login
    /// polling from many threads met itself on one shard's mutex).
    private let lastTouch: [Shard] = (0..<16).map { _ in Shard() }
    private final class Shard: Sendable { let seen = ReadWriteLock<[Int: Date]>([:]) }
    let interval: TimeInterval

    public init(interval: TimeInterval = 15) {
        self.interval = interval
    }

    /// The touch as a statement, which a push sends in the push's own transaction.
    static let statement: SQL = .reused("select app.touch_presence()")

    /// Whether this login's touch is due in this worker process; if so it counts as done
    /// from now. A push that is due sends `statement` in the push's transaction, before its
    /// COMMIT: one WAL flush on the answer's path rather than two (docs/performance/round-06.md,
    /// "The write's tail"). `digest`: the token's (`Tokens.digest`), when the caller has it.
    func due(_ context: RequestContext, digest known: [UInt8]? = nil) -> Bool {
        guard let token = context.bearerToken else { return false }
        let digest = known ?? Tokens.digest(token)
        let key = Tokens.memoryKey(digest)
        let now = Date()
        let shard = lastTouch[Int(digest[8] & 15)]
        if let last = shard.seen.read({ $0[key] }), now.timeIntervalSince(last) < interval { return false }
        return shard.seen.write { seen -> Bool in
            // Again: another thread of the same login may have touched it meanwhile.
            if let last = seen[key], now.timeIntervalSince(last) < interval { return false }
            if seen.count > 5_000 { seen.removeAll() }
            seen[key] = now
            return true
        }
    }

    /// Call after a successful sync request (its Bearer token identifies the login) that
    /// does not write: the touch in a small transaction of its own.
    /// `beforeWriting`: called only when the touch is due, before its write.
    func touch(_ context: RequestContext, digest known: [UInt8]? = nil, beforeWriting: () -> Void = {}) {
        guard let token = context.bearerToken, due(context, digest: known) else { return }
        beforeWriting()
        do {
            try context.asCaller(token: token) { tx, _ in _ = try tx.query(Presence.statement) }
        } catch let error as DatabaseError where error.sqlState == "28000" {
            // A revoked or expired token: the request itself answers 401 next; nothing to log.
        } catch {
            // Presence is best effort: the sync request goes on either way.
            Log.warning("presence not updated: \(error)", requestID: context.requestID)
        }
    }

    /// Every 10 s, users idle for 60 s go Off-Line. Every worker process runs it; the
    /// function skips rows another sweeper holds.
    public static func startSweeping(_ pool: ConnectionPool, idleSeconds: Int = 60) {
        let thread = Thread {
            while true {
                sleep(10)
                _ = try? pool.withConnection { try $0.execute("select app.sweep_presence(\(idleSeconds))") }
            }
        }
        thread.name = "presence-sweep"
        thread.start()
    }
}
