import Synchronization
import Sync

/// What this worker process knows of photos' stored content, so that a download can be
/// answered without PostgreSQL (`BlobRoutes.download`): per photo id, its partition and the
/// content `app.blob_for_download` answered. The caller's side (the token valid, the
/// partition readable, whose token it is) is the `AuthCache`'s, learned from the same answer.
///
/// Kept under the `AuthCache`'s generation: an entry is trusted only while that generation
/// has not moved since the statement that answered it began. It moves on every
/// `tideway_auth` notification — which the triggers of repeatable/0094 send on every change
/// of a photo's partition, deletion or content, besides every change of tokens and rights —
/// and whenever the listener connects or is lost, so this memory is emptied with the cache.
final class BlobMemory: Sendable {
    struct Blob: Equatable {
        var partition: String
        var sha256: String
        var contentType: String
        var bytes: Int64
    }

    private struct State {
        var generation: UInt64 = 0
        var blobs: [String: Blob] = [:]
    }

    private let state = Mutex(State())
    /// Photos kept at most; beyond, the memory starts again (only a saving is lost).
    let capacity: Int

    init(capacity: Int = 100_000) {
        self.capacity = capacity
    }

    /// The photo's content, when it was answered under `generation` (the cache's, now).
    func blob(_ photo: String, generation: UInt64) -> Blob? {
        state.withLock { $0.generation == generation ? $0.blobs[photo] : nil }
    }

    /// Remembers what a download's statement answered, `seen` the cache's generation read
    /// before it began; dropped when it has moved since (`current`), for the statement may
    /// have read what the invalidation was about.
    func fill(_ photo: String, _ blob: Blob, since seen: UInt64, current: UInt64) {
        guard seen == current else { return }
        state.withLock { state in
            if state.generation < seen {
                state.blobs.removeAll()
                state.generation = seen
            }
            guard state.generation == seen else { return }
            if state.blobs[photo] == nil && state.blobs.count >= capacity { state.blobs.removeAll() }
            state.blobs[photo] = blob
        }
    }
}
