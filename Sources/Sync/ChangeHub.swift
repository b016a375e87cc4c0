import Database
import Foundation
import Synchronization

/// Commit notifications for this worker process. One thread LISTENs on its own connection
/// (`tideway_changes`, payload: the partition) and wakes long polls waiting for those
/// partitions. Waiting holds a FastCGI thread but no database connection, and only
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
                    trips.connected()
                    try pump(connection)
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
    /// a second passed): the listener makes a round trip begun after the call (a Sync,
    /// `Connection.roundTrip`), and a listening backend sends every notification committed
    /// before it ahead of its answer (it takes them in before it reports ready). One round
    /// trip answers every poll that was waiting when it was sent.
    package func barrier() -> Bool {
        trips.await(timeout: 1)
    }

    private func pump(_ connection: Connection) throws {
        var descriptors = [pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: trips.wakeFD, events: Int16(POLLIN), revents: 0)]
        while true {
            let ready = poll(&descriptors, 2, 5000)
            if ready < 0 && errno != EINTR { throw DatabaseError(kind: .unavailable, detail: "poll failed") }
            // Only what poll found readable (or closed): under idle polls the listener makes
            // thousands of round trips a second, and each empty `read` or `recv` was a
            // system call for nothing.
            if descriptors[1].revents != 0 { trips.drainWake() }
            if descriptors[0].revents != 0 || ready <= 0 {
                deliver(try connection.notifications())
                if !connection.isHealthy { throw DatabaseError(kind: .unavailable, detail: "listener connection lost") }
            }
            if let ticket = trips.pending() {
                // No statement: a Sync alone brings the notifications just as well, and
                // costs the backend no transaction (it was `select 1`, prepared).
                try connection.roundTrip()
                // Read by libpq while it waited for the answer: every notification the
                // backend sent ahead of it.
                deliver(try connection.notifications(readingInput: false))
                if !connection.isHealthy { throw DatabaseError(kind: .unavailable, detail: "listener connection lost") }
                trips.completed(ticket)
            }
        }
    }

    private func deliver(_ notes: [(channel: String, payload: String)]) {
        for note in notes {
            if note.channel == "tideway_auth" { auth.invalidate() } else { notify(note.payload) }
        }
    }
}

/// The listener's round trips on behalf of polls (`ChangeHub.barrier`): polls take tickets,
/// the listener covers every ticket taken before it sent its round trip.
///
/// Each waiting poll sleeps on a semaphore of its own, signalled by the listener once a
/// round trip covers it. With one condition broadcast, every poll a round trip let through
/// woke at once and queued on the condition's mutex (32 clients: about one lock wait per
/// poll, a sixth of a worker's context switches; docs/performance.md, "The idle poll's
/// wake-ups"); a semaphore's waiter leaves its wait holding nothing.
///
/// `@unchecked Sendable`: all mutable state is guarded by `lock`; the pipe's ends are set once.
final class ListenerBarrier: @unchecked Sendable {
    private final class Waiter {
        let ticket: UInt64
        let semaphore = DispatchSemaphore(value: 0)
        /// Set before the semaphore is signalled: let through (true) or the listener lost.
        var passed = false
        init(ticket: UInt64) { self.ticket = ticket }
    }

    private let lock = NSLock()
    private var asked: UInt64 = 0
    /// The polls waiting, in ticket order.
    private var waiters: [Waiter] = []
    private var live = false
    /// A byte is in the pipe and the listener has not yet taken the tickets.
    private var woken = false
    /// The pipe that wakes the listener out of `poll`.
    let wakeFD: Int32
    private let wakeWrite: Int32

    init() {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for fd in ends { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        }
        wakeFD = ends[0]
        wakeWrite = ends[1]
    }

    func await(timeout: TimeInterval) -> Bool {
        lock.lock()
        guard live, wakeWrite >= 0 else {
            lock.unlock()
            return false
        }
        asked += 1
        let waiter = Waiter(ticket: asked)
        waiters.append(waiter)
        if !woken {
            woken = true
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
        lock.unlock()
        if waiter.semaphore.wait(timeout: .now() + timeout) == .success { return waiter.passed }
        // Timed out: withdraw, unless a round trip (or the loss) took it meanwhile and is
        // about to signal it.
        lock.lock()
        if let index = waiters.firstIndex(where: { $0 === waiter }) {
            waiters.remove(at: index)
            lock.unlock()
            return false
        }
        lock.unlock()
        waiter.semaphore.wait()
        return waiter.passed
    }

    /// Empties the pipe (a short read leaves it empty: one byte is written per round trip).
    func drainWake() {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { buffer in
            while read(wakeFD, buffer.baseAddress, 64) == 64 {}
        }
    }

    /// The tickets a round trip sent now covers; nil when no poll waits.
    func pending() -> UInt64? {
        lock.lock()
        defer { lock.unlock() }
        woken = false
        return waiters.isEmpty ? nil : asked
    }

    /// A round trip sent when `pending` answered `ticket` returned: lets those polls through.
    func completed(_ ticket: UInt64) {
        lock.lock()
        let through = waiters.prefix { $0.ticket <= ticket }
        waiters.removeFirst(through.count)
        lock.unlock()
        for waiter in through {
            waiter.passed = true
            waiter.semaphore.signal()
        }
    }

    func connected() {
        lock.lock()
        live = true
        lock.unlock()
    }

    /// The listening connection is lost: every waiting poll fails (it cannot tell).
    func lost() {
        lock.lock()
        live = false
        let failed = waiters
        waiters.removeAll()
        lock.unlock()
        for waiter in failed { waiter.semaphore.signal() }
    }
}
