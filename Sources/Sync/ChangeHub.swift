import Database
import Foundation
import Synchronization

/// Commit notifications for this worker process. One thread LISTENs on its own connection
/// (`tideway_changes`, payload: the partition, maybe with a collection: ChangeNotice) and
/// wakes long polls waiting for those partitions. Waiting holds a FastCGI thread but no database connection, and only
/// `capacity` requests may wait at once, so ordinary requests always find a thread.
///
/// It also keeps what this worker's pulls saw of each partition's clock (`saw`), so that a
/// pull whose partition is known to have moved past its cursor skips the idle check
/// (`moved`): that check would only answer "changed", a round trip for nothing; and, with
/// `auth`, so that an idle poll is answered from memory (`quiet`, `barrier`). The same
/// connection listens on `tideway_auth` (repeatable/0094): it empties `auth` on every
/// notification.
///
/// `@unchecked Sendable`: all mutable state is guarded by `condition`.
public final class ChangeHub: @unchecked Sendable {
    private let condition = NSCondition()
    private var counter: UInt64 = 0 {
        didSet { published.store(counter, ordering: .releasing) }
    }
    /// `counter`, readable without the lock (`generation`: every pull reads it, and 32
    /// polling threads queued on the lock for it).
    private let published = Atomic<UInt64>(0)
    private var lastChange: [String: UInt64] = [:]
    /// Per partition: a clock a pull's statement saw, its compaction horizon when the
    /// statement compared it (an idle check), and the generation read before it.
    private var clocks: [String: (seq: Int64, horizon: Int64?, generation: UInt64)] = [:]
    /// The generation when the listener last connected: clocks seen before may have missed
    /// a notification.
    private var listenedAt: UInt64 = 0
    private var waiting = 0
    private let capacity: Int
    /// False while the listening connection is down: waits then poll instead.
    private var listening = false
    /// Tokens and rights this worker saw, for idle polls answered from memory.
    package let auth = AuthCache()
    private let trips = ListenerBarrier()

    public init(capacity: Int) {
        self.capacity = capacity
    }

    /// Grows with every notification; read it before a snapshot, wait on it after.
    /// A value read while a notification is being recorded may be the one before it: only
    /// ever too low, which makes a wait or a hint look again, never miss a change.
    public var generation: UInt64 { published.load(ordering: .acquiring) }

    func notify(_ partition: String) {
        condition.lock()
        counter += 1
        lastChange[partition] = counter
        // The map only needs partitions someone may wait for; keep it from growing forever
        // (the clocks with it: `quiet` must not take a forgotten change for none).
        if lastChange.count > 100_000 {
            lastChange.removeAll()
            clocks.removeAll()
        }
        condition.broadcast()
        condition.unlock()
    }

    /// Notes that a statement begun after `generation` saw `partition`'s clock at `seq`
    /// (a snapshot's status, or an idle check that found the cursor at the clock). The later
    /// observation wins, even a lower clock (a restored database), so a wrong hint lasts one pull.
    /// `horizon`: the partition's compaction horizon, when the statement compared it too.
    func saw(_ partition: String, clock seq: Int64, horizon: Int64? = nil, since generation: UInt64) {
        saw([partition: seq], horizon: horizon, since: generation)
    }

    func saw(_ seen: [String: Int64], horizon: Int64? = nil, since generation: UInt64) {
        condition.lock()
        defer { condition.unlock() }
        for (partition, seq) in seen {
            if let known = clocks[partition], known.generation > generation
                || (known.generation == generation && (known.seq > seq || (known.seq == seq && horizon == nil))) {
                continue
            }
            // Only a hint: keep the map from growing forever.
            if clocks.count >= 100_000 { clocks.removeAll() }
            clocks[partition] = (seq, horizon, generation)
        }
    }

    /// Whether a cursor at (`seq`, `horizon`) of `partition` is known to be at its end, as
    /// an idle check would find it: an idle check saw exactly that clock and horizon, and no
    /// commit (nor compaction) of the partition was notified since, nor the listener lost.
    /// A commit whose notification is still on its way is not known: the answer is then the
    /// one the poll would have had a moment earlier (docs/sync-protocol.md).
    func quiet(_ partition: String, seq: Int64, horizon: Int64) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard listening, let known = clocks[partition], known.generation >= listenedAt,
              known.seq == seq, known.horizon == horizon else { return false }
        return (lastChange[partition] ?? 0) <= known.generation
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
        // First: no answer from memory once the connection is known lost.
        if !value { auth.setLive(false) }
        condition.lock()
        listening = value
        counter += 1
        if value {
            listenedAt = counter
        } else {
            // Notifications may have been lost: let every waiter look again, forget clocks.
            for key in lastChange.keys { lastChange[key] = counter }
            clocks.removeAll()
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
                    try connection.execute("listen tideway_auth")
                    auth.setLive(true)
                    setListening(true)
                    let listening = ListeningConnection(connection)
                    guard let watch = SocketWatch(socket: listening.socket) else {
                        throw DatabaseError(kind: .unavailable, detail: "cannot watch the listening connection")
                    }
                    trips.connected(Link(hub: self, listening: listening, watch: watch))
                    try pump(listening, watch: watch)
                } catch {
                    trips.lost()
                    setListening(false)
                    usleep(500_000)
                }
            }
        }
        thread.name = "change-listener"
        thread.start()
    }

    /// Returns once this worker has received every notification committed before the call
    /// (true), or false when it cannot tell (the listener lost or reconnected meanwhile, or
    /// a second passed): a round trip begun after the call (a Sync) on the listening
    /// connection, and a listening backend sends every notification committed before it ahead
    /// of its answer (it takes them in before it reports ready). One round trip answers every
    /// poll that was waiting when it was sent.
    package func barrier() -> Bool {
        trips.await(timeout: 1)
    }

    /// `barrier()` begun now and finished by `barrier(_:)` (or given back by `release(_:)`):
    /// it covers every notification committed before this call, and its round trip runs
    /// while the caller does its own work (`ListenerBarrier.take`). Nil: no listener.
    func takeBarrier() -> ListenerBarrier.Ticket? {
        trips.take()
    }

    /// Finishes a barrier begun by `takeBarrier()` (false without one, as `barrier()`).
    func barrier(_ ticket: ListenerBarrier.Ticket?) -> Bool {
        guard let ticket else { return false }
        return trips.finish(ticket, timeout: 1)
    }

    /// Gives back a barrier begun and not finished (nothing if it was).
    func release(_ ticket: ListenerBarrier.Ticket?) {
        if let ticket { trips.release(ticket) }
    }

    /// The listener thread: reads the listening connection whenever input arrives (and
    /// every 5 s, to notice a lost connection), unless a poll is reading it for its own
    /// round trip (`ListenerBarrier`).
    private func pump(_ listening: ListeningConnection, watch: SocketWatch) throws {
        while true {
            watch.wait(milliseconds: 5000)
            guard trips.listenerMayRead() else { continue }
            do {
                try drain(listening)
            } catch {
                trips.listenerDone {}
                throw error
            }
            trips.listenerDone { watch.resume() }
        }
    }

    /// Reads what arrived: notifications, and the answers to the Syncs the barrier's
    /// callers sent.
    private func drain(_ listening: ListeningConnection) throws {
        let (answered, notes) = try listening.read()
        // The notifications first: the polls a Sync's answer lets through must find what
        // was notified ahead of it already applied.
        deliver(notes)
        for _ in 0..<answered { trips.answered() }
    }

    /// The listening connection as the barrier uses it: a poll that sends a round trip
    /// reads its answer itself (`drive`) while the listener thread's watch is paused.
    private final class Link: ListenerLink {
        unowned let hub: ChangeHub
        let listening: ListeningConnection
        let watch: SocketWatch

        init(hub: ChangeHub, listening: ListeningConnection, watch: SocketWatch) {
            self.hub = hub
            self.listening = listening
            self.watch = watch
        }

        func send() { listening.sendSync() }
        var drivable: Bool { true }
        func listenerWatches(_ on: Bool) { on ? watch.resume() : watch.pause() }

        func drive(timeout: TimeInterval) -> Bool {
            var descriptor = pollfd(fd: listening.socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32(min(timeout, 1) * 1000) + 1)
            if ready < 0 && errno != EINTR { return fail() }
            guard ready > 0 else { return true }
            do {
                try hub.drain(listening)
                return true
            } catch {
                return fail()
            }
        }

        /// Ends the connection, so that the listener thread (its watch restarted) finds it
        /// lost, fails the waiting polls and connects again.
        private func fail() -> Bool {
            _ = shutdown(listening.socket, Int32(SHUT_RDWR))
            return false
        }
    }

    private func deliver(_ notes: [(channel: String, payload: String)]) {
        for note in notes {
            if note.channel == "tideway_auth" { auth.invalidate() } else { notify(ChangeNotice(payload: note.payload).partition) }
        }
    }
}
