import Database
import Foundation

/// Commit notifications for this worker process. One thread LISTENs on its own connection
/// (`tideway_changes`, payload: the partition) and wakes long polls waiting for those
/// partitions. Waiting holds a FastCGI thread but no database connection, and only
/// `capacity` requests may wait at once, so ordinary requests always find a thread.
///
/// It also keeps what this worker's pulls saw of each partition's clock (`saw`), so that a
/// pull whose partition is known to have moved past its cursor skips the idle check
/// (`moved`): that check would only answer "changed", a round trip for nothing.
///
/// `@unchecked Sendable`: all mutable state is guarded by `condition`.
public final class ChangeHub: @unchecked Sendable {
    private let condition = NSCondition()
    private var counter: UInt64 = 0
    private var lastChange: [String: UInt64] = [:]
    /// Per partition: a clock a pull's statement saw, and the generation read before it.
    private var clocks: [String: (seq: Int64, generation: UInt64)] = [:]
    private var waiting = 0
    private let capacity: Int
    /// False while the listening connection is down: waits then poll instead.
    private var listening = false

    public init(capacity: Int) {
        self.capacity = capacity
    }

    /// Grows with every notification; read it before a snapshot, wait on it after.
    public var generation: UInt64 {
        condition.lock()
        defer { condition.unlock() }
        return counter
    }

    func notify(_ partition: String) {
        condition.lock()
        counter += 1
        lastChange[partition] = counter
        // The map only needs partitions someone may wait for; keep it from growing forever.
        if lastChange.count > 100_000 { lastChange.removeAll() }
        condition.broadcast()
        condition.unlock()
    }

    /// Notes that a statement begun after `generation` saw `partition`'s clock at `seq`
    /// (a snapshot's status, or an idle check that found the cursor at the clock). The later
    /// observation wins, even a lower clock (a restored database), so a wrong hint lasts one pull.
    func saw(_ partition: String, clock seq: Int64, since generation: UInt64) {
        saw([partition: seq], since: generation)
    }

    func saw(_ seen: [String: Int64], since generation: UInt64) {
        condition.lock()
        defer { condition.unlock() }
        for (partition, seq) in seen {
            if let known = clocks[partition], known.generation > generation || (known.generation == generation && known.seq >= seq) {
                continue
            }
            // Only a hint: keep the map from growing forever.
            if clocks.count >= 100_000 { clocks.removeAll() }
            clocks[partition] = (seq, generation)
        }
    }

    /// Whether `partition` has changes after `seq`, as far as this worker knows: a pull saw
    /// its clock past `seq`, or saw it at `seq` and a commit was notified since. Only a hint
    /// for skipping the idle check, never for an answer: a wrong "true" (a commit the pull
    /// saw, notified after the generation it read) costs one snapshot that answers no changes
    /// and corrects what is known; "false" costs the idle check, as before.
    func moved(_ partition: String, past seq: Int64) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard let known = clocks[partition] else { return false }
        return known.seq > seq || (known.seq == seq && (lastChange[partition] ?? 0) > known.generation)
    }

    /// Waits until one of `partitions` changes after `generation`, or `deadline`. False
    /// when no waiting slot is free (the caller answers at once).
    func wait(for partitions: Set<String>, after generation: UInt64, until deadline: Date) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard waiting < capacity else { return false }
        waiting += 1
        defer { waiting -= 1 }
        while Date() < deadline {
            if partitions.contains(where: { (lastChange[$0] ?? 0) > generation }) { return true }
            // Without a listener, nothing would wake us: look again every second.
            let wake = listening ? deadline : min(deadline, Date().addingTimeInterval(1))
            if !condition.wait(until: wake) && !listening { return true }
        }
        return true
    }

    func setListening(_ value: Bool) {
        condition.lock()
        listening = value
        if !value {
            // Notifications may have been lost: let every waiter look again.
            counter += 1
            for key in lastChange.keys { lastChange[key] = counter }
        }
        condition.broadcast()
        condition.unlock()
    }

    /// Starts the listening thread; it reconnects after the database restarts.
    public func startListening(conninfo: String) {
        let thread = Thread { [self] in
            while true {
                do {
                    let connection = try Connection(conninfo: conninfo)
                    try connection.execute("listen tideway_changes")
                    setListening(true)
                    try pump(connection)
                } catch {
                    setListening(false)
                    usleep(500_000)
                }
            }
        }
        thread.name = "change-listener"
        thread.start()
    }

    private func pump(_ connection: Connection) throws {
        var descriptor = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&descriptor, 1, 5000)
            if ready < 0 && errno != EINTR { throw DatabaseError(kind: .unavailable, detail: "poll failed") }
            for note in try connection.notifications() { notify(note.payload) }
            if !connection.isHealthy { throw DatabaseError(kind: .unavailable, detail: "listener connection lost") }
        }
    }
}
