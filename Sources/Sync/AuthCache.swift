import Foundation
import Support

/// What this worker process knows of access tokens, so that an idle poll can be answered
/// without PostgreSQL (`PullRoute.unchanged`): per token (its SHA-256), until when it is
/// valid and which partitions it was seen allowed to read — both learned from an idle check
/// PostgreSQL answered "unchanged" (the token authenticated, every partition readable), or
/// from a photo download PostgreSQL answered (which also tells whose token it is; the
/// download's own memory, `BlobMemory`, is kept under this cache's `generation`).
///
/// Trusted only while nothing that could make it wrong can have happened unheard: every
/// change that can end a token or a right notifies `tideway_auth` (statement triggers,
/// repeatable/0094), on which the listener (`ChangeHub`) empties this cache (`invalidate`),
/// and a poll is answered from it only after a round trip of the listener begun after the
/// poll arrived (`ChangeHub.barrier`), which brings every such notification committed
/// before. Losing the listening connection empties it too (`setLive(false)`), and so does
/// connecting again (a notification may have been missed in between). A fill that began
/// before an invalidation is dropped (`fill(since:)`): its statement may have read the old
/// state.
package final class AuthCache: Sendable {
    struct Entry {
        /// `DispatchTime` uptime (ns) at which the token expires, counted from before the
        /// statement that read its remaining life (so never later than PostgreSQL's).
        var expires: UInt64
        var readable: Set<String>
        /// The token's user, when a statement that answered it was seen (a download's).
        var user: String?
    }

    private struct State {
        var entries: [[UInt8]: Entry] = [:]
        /// Grows with every invalidation; a fill carries the one it read before its statement.
        var generation: UInt64 = 0
        /// The listener is connected.
        var live = false
    }

    /// Read by every idle poll and download, written by fills and invalidations.
    private let state = ReadWriteLock(State())
    /// Entries kept at most; beyond, the cache starts again (only a saving is lost).
    let capacity: Int

    package init(capacity: Int = 100_000) {
        self.capacity = capacity
    }

    package static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Read before the statement whose answer may `fill` the cache. Grows with every
    /// invalidation, so what is remembered elsewhere under it is forgotten with the cache.
    package var generation: UInt64 { state.read { $0.generation } }

    /// Whether the token (its hash) is known valid now and allowed to read every one of
    /// `partitions`, with the listener live.
    func allows(_ hash: [UInt8], _ partitions: [String], now: UInt64 = now()) -> Bool {
        state.read { state in
            guard state.live, let entry = state.entries[hash], now < entry.expires else { return false }
            return partitions.allSatisfy(entry.readable.contains)
        }
    }

    /// The token's user, when the token is known valid now and allowed to read `partition`,
    /// and its user known, with the listener live.
    package func caller(_ hash: [UInt8], reading partition: String, now: UInt64 = now()) -> String? {
        state.read { state in
            guard state.live, let entry = state.entries[hash], now < entry.expires,
                  entry.readable.contains(partition) else { return nil }
            return entry.user
        }
    }

    /// Remembers what an idle check answered by PostgreSQL showed: the token valid for
    /// `seconds` more (counted from `asked`, before the statement), `partitions` readable.
    /// Dropped when an invalidation came since `generation` (read before the statement), or
    /// when the listener is not live.
    package func fill(_ hash: [UInt8], readable partitions: [String], seconds: Double, asked: UInt64,
                      since generation: UInt64, user: String? = nil) {
        guard seconds > 0 else { return }
        let expires = asked &+ UInt64(min(seconds, 86_400 * 365) * 1e9)
        state.write { state in
            guard state.live, state.generation == generation else { return }
            if state.entries[hash] == nil && state.entries.count >= capacity { state.entries.removeAll() }
            state.entries[hash, default: Entry(expires: expires, readable: [])].readable.formUnion(partitions)
            state.entries[hash]?.expires = expires
            if let user { state.entries[hash]?.user = user }
        }
    }

    /// Something that decides tokens or rights changed: forget everything.
    func invalidate() {
        state.write { state in
            state.entries.removeAll()
            state.generation += 1
        }
    }

    /// The listener connected (after LISTEN) or lost its connection. Both forget everything:
    /// a fill whose statement ran before LISTEN may have missed a notification.
    func setLive(_ live: Bool) {
        state.write { state in
            state.entries.removeAll()
            state.generation += 1
            state.live = live
        }
    }
}
