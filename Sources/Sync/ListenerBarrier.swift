import Database
import Foundation

/// The listening connection, used by the listener thread (`read`) and by the threads that
/// send the barrier's Syncs (`sendSync`), one at a time.
///
/// `@unchecked Sendable`: the connection is only used under `use`.
final class ListeningConnection: @unchecked Sendable {
    private let connection: Connection
    private let use = NSLock()
    let socket: Int32

    init(_ connection: Connection) {
        self.connection = connection
        socket = connection.socket
    }

    func sendSync() {
        use.withLock {
            // A Sync that cannot be sent would leave its polls waiting: end the connection,
            // so that the listener fails them and connects again.
            if !connection.sendSync() { _ = shutdown(socket, Int32(SHUT_RDWR)) }
        }
    }

    /// What arrived: how many Syncs were answered, and the notifications (those committed
    /// before a Sync come ahead of its answer). Throws once the connection is lost.
    func read() throws(DatabaseError) -> (answered: Int, notes: [(channel: String, payload: String)]) {
        use.lock()
        defer { use.unlock() }
        let answered = try connection.syncsAnswered()
        let notes = try connection.notifications(readingInput: false)
        guard connection.isHealthy else { throw DatabaseError(kind: .unavailable, detail: "listener connection lost") }
        return (answered, notes)
    }
}

/// The listener's round trips on behalf of polls (`ChangeHub.barrier`): polls take tickets,
/// a round trip covers every ticket taken before its Sync was sent. One is in flight at a
/// time: the poll that finds none sends it itself, on the listening connection, while the
/// listener thread waits in `poll` for its answer; polls that come meanwhile are covered by
/// the next, which the listener sends as soon as the answer is in. Before, a poll woke the
/// listener thread through a pipe to send every Sync: one more sleep and wake-up, and two
/// more system calls, per round trip (a photo download's context switches in the worker
/// went from 4.3 to 3.3; docs/performance.md, "Blobs, seventh round").
///
/// Each waiting poll sleeps on a semaphore of its own, signalled by the listener once a
/// round trip covers it. With one condition broadcast, every poll a round trip let through
/// woke at once and queued on the condition's mutex (32 clients: about one lock wait per
/// poll, a sixth of a worker's context switches; docs/performance.md, "The idle poll's
/// wake-ups"); a semaphore's waiter leaves its wait holding nothing.
///
/// `@unchecked Sendable`: all mutable state is guarded by `lock`.
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
    /// Sends a Sync on the listening connection; nil while there is none.
    private var send: (@Sendable () -> Void)?
    /// The last ticket the round trip in flight covers; nil when none is.
    private var inFlight: UInt64?

    func await(timeout: TimeInterval) -> Bool {
        lock.lock()
        guard let send else {
            lock.unlock()
            return false
        }
        asked += 1
        let waiter = Waiter(ticket: asked)
        waiters.append(waiter)
        let sending = inFlight == nil
        if sending { inFlight = asked }
        lock.unlock()
        // After the ticket was taken: this round trip covers it.
        if sending { send() }
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

    /// The listener read the answer to the round trip in flight (and applied the
    /// notifications that came ahead of it): lets the polls it covers through, and sends
    /// the next for those that came after it was sent.
    func answered() {
        lock.lock()
        guard let covered = inFlight else {
            lock.unlock()
            return
        }
        let through = waiters.prefix { $0.ticket <= covered }
        waiters.removeFirst(through.count)
        inFlight = waiters.isEmpty ? nil : asked
        let next = inFlight == nil ? nil : send
        lock.unlock()
        next?()
        for waiter in through {
            waiter.passed = true
            waiter.semaphore.signal()
        }
    }

    /// The listening connection is up; `send` sends a Sync on it.
    func connected(send: @escaping @Sendable () -> Void) {
        lock.lock()
        self.send = send
        inFlight = nil
        lock.unlock()
    }

    /// The listening connection is lost: every waiting poll fails (it cannot tell).
    func lost() {
        lock.lock()
        send = nil
        inFlight = nil
        let failed = waiters
        waiters.removeAll()
        lock.unlock()
        for waiter in failed { waiter.semaphore.signal() }
    }
}
