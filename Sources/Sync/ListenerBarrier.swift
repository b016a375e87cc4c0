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

/// The listening connection as the barrier uses it.
protocol ListenerLink: AnyObject, Sendable {
    /// Sends a Sync.
    func send()
    /// Whether a poll may read the connection itself (`drive`): false for a link that only sends.
    var drivable: Bool { get }
    /// Stops (false) or restarts (true) waking the listener thread on input. Called under the
    /// barrier's lock, so that it never crosses the listener's own decision to read.
    func listenerWatches(_ on: Bool)
    /// Waits up to `timeout` for input and reads it: applies the notifications, then reports
    /// each Sync answered (`ListenerBarrier.answered`). False once the connection failed.
    func drive(timeout: TimeInterval) -> Bool
}

/// A link that only sends (in-process tests): the listener reads every answer.
final class SendingLink: ListenerLink {
    let sending: @Sendable () -> Void
    init(sending: @escaping @Sendable () -> Void) { self.sending = sending }
    func send() { sending() }
    var drivable: Bool { false }
    func listenerWatches(_ on: Bool) {}
    func drive(timeout: TimeInterval) -> Bool { false }
}

/// The listener's round trips on behalf of polls (`ChangeHub.barrier`): polls take tickets,
/// a round trip covers every ticket taken before its Sync was sent. One is in flight at a
/// time: the poll that finds none sends it itself, on the listening connection; polls that
/// come meanwhile are covered by the next, which is sent as soon as the answer is in. Before,
/// a poll woke the listener thread through a pipe to send every Sync: one more sleep and
/// wake-up, and two more system calls, per round trip (a photo download's context switches
/// in the worker went from 4.3 to 3.3; docs/performance/round-07.md, "Blobs, seventh round").
///
/// The poll that sends a round trip also reads its answer (`drive`), while the listener
/// thread is told not to wake for it (`ListenerLink.listenerWatches`): with 32 clients most
/// round trips cover one poll, and the listener's wake-up to read the answer, then the poll's
/// to be let through, were two of a poll's three or four thread switches in the worker
/// (docs/performance/round-09.md, "The idle poll's round trip read by the poll"). It does so only when
/// the listener thread is not reading at that moment (else the listener reads it, as before),
/// and hands the connection back once its own ticket is through: a round trip sent for polls
/// that came meanwhile is read by the listener.
///
/// Each poll that waits for another's round trip sleeps on a semaphore of its own, signalled
/// once a round trip covers it. With one condition broadcast, every poll a round trip let
/// through woke at once and queued on the condition's mutex (32 clients: about one lock wait
/// per poll, a sixth of a worker's context switches; docs/performance/round-06.md, "The idle poll's
/// wake-ups"); a semaphore's waiter leaves its wait holding nothing.
///
/// `@unchecked Sendable`: all mutable state is guarded by `lock`.
final class ListenerBarrier: @unchecked Sendable {
    fileprivate final class Waiter {
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
    /// The listening connection; nil while there is none.
    private var link: (any ListenerLink)?
    /// The last ticket the round trip in flight covers; nil when none is.
    private var inFlight: UInt64?
    /// The listener thread is reading the connection (between `listenerMayRead` and
    /// `listenerDone`).
    private var listenerReading = false
    /// A poll is reading the connection (`drive`); the listener thread does not.
    private var driving = false

    /// A poll's place in the barrier, taken with `take` and waited for with `finish`, or
    /// given back with `release`.
    final class Ticket {
        fileprivate let waiter: Waiter
        fileprivate let link: any ListenerLink
        /// This poll reads the connection for its round trip (`drive`).
        fileprivate let drives: Bool
        fileprivate var settled = false
        fileprivate init(waiter: Waiter, link: any ListenerLink, drives: Bool) {
            self.waiter = waiter
            self.link = link
            self.drives = drives
        }
    }

    /// Waits until a round trip sent after this call lets the caller through (true), or the
    /// listener is lost, or `timeout` passed (false).
    func await(timeout: TimeInterval) -> Bool {
        guard let ticket = take() else { return false }
        return finish(ticket, timeout: timeout)
    }

    /// Takes a ticket now, and sends a round trip if none is in flight: a round trip sent after
    /// this call covers it. Taken as a poll arrives, before its own work (the body's parse,
    /// the cursor's MAC, the token's digest), the round trip runs meanwhile, and its answer is
    /// often in when the poll asks (`finish`): no sleep for it
    /// (docs/performance/round-20.md, "Change: the barrier begun at the poll's arrival").
    /// Nil without a listening connection.
    func take() -> Ticket? {
        lock.lock()
        guard let link else {
            lock.unlock()
            return nil
        }
        asked += 1
        let waiter = Waiter(ticket: asked)
        waiters.append(waiter)
        let sending = inFlight == nil
        var drives = false
        if sending {
            inFlight = asked
            if link.drivable && !listenerReading && !driving {
                driving = true
                drives = true
                link.listenerWatches(false)
            }
        }
        lock.unlock()
        // After the ticket was taken: this round trip covers it.
        if sending { link.send() }
        return Ticket(waiter: waiter, link: link, drives: drives)
    }

    /// Waits for `ticket` (once): true once a round trip sent after it was taken let it
    /// through, false when the listener was lost or `timeout` (from now) passed.
    func finish(_ ticket: Ticket, timeout: TimeInterval) -> Bool {
        precondition(!ticket.settled, "a ticket is awaited or released once")
        ticket.settled = true
        let waiter = ticket.waiter, link = ticket.link
        let deadline = DispatchTime.now() + timeout
        if ticket.drives {
            // Read until a round trip lets this poll through (its own answer: only this
            // thread reads now), the connection fails, or the time is up. An answer already
            // in is read without a sleep (`drive`'s poll returns at once).
            var through = false
            while !through {
                let left = Double(deadline.uptimeNanoseconds &- DispatchTime.now().uptimeNanoseconds) / 1e9
                guard left > 0, left <= timeout, link.drive(timeout: left) else { break }
                through = waiter.semaphore.wait(timeout: .now()) == .success
            }
            handBack(link)
            if through { return waiter.passed }
        }
        if waiter.semaphore.wait(timeout: deadline) == .success { return waiter.passed }
        // Timed out: withdraw, unless a round trip (or the loss) took it meanwhile and is
        // about to signal it.
        if withdraw(waiter) { return false }
        waiter.semaphore.wait()
        return waiter.passed
    }

    /// Gives back a ticket that will not be awaited (the poll found it needs no barrier, or
    /// failed first): its round trip still goes and comes back, read by the listener.
    func release(_ ticket: Ticket) {
        guard !ticket.settled else { return }
        ticket.settled = true
        if ticket.drives { handBack(ticket.link) }
        _ = withdraw(ticket.waiter)
    }

    /// A driving poll is done reading: the listener thread reads again (only if this is still
    /// the connection it read: a new one starts afresh).
    private func handBack(_ link: any ListenerLink) {
        lock.lock()
        if let current = self.link, current === link {
            driving = false
            current.listenerWatches(true)
        }
        lock.unlock()
    }

    /// Removes a waiter not yet let through: true if it was still waiting.
    private func withdraw(_ waiter: Waiter) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard let index = waiters.firstIndex(where: { $0 === waiter }) else { return false }
        waiters.remove(at: index)
        return true
    }

    /// The round trip in flight was answered (and the notifications that came ahead of it
    /// applied): lets the polls it covers through, and sends the next for those that came
    /// after it was sent.
    func answered() {
        lock.lock()
        guard let covered = inFlight else {
            lock.unlock()
            return
        }
        let through = waiters.prefix { $0.ticket <= covered }
        waiters.removeFirst(through.count)
        inFlight = waiters.isEmpty ? nil : asked
        let next = inFlight == nil ? nil : link
        lock.unlock()
        next?.send()
        for waiter in through {
            waiter.passed = true
            waiter.semaphore.signal()
        }
    }

    /// The listener thread was woken (input, or its wait's end): whether it may read the
    /// connection now. False while a poll reads it; that poll restarts the listener's
    /// watch when it is done.
    func listenerMayRead() -> Bool {
        lock.withLock {
            guard !driving else { return false }
            listenerReading = true
            return true
        }
    }

    /// The listener thread has read what arrived; `watch` restarts its wait for input
    /// (under the lock: a poll deciding to read the connection itself sees either the
    /// listener reading or its watch on, never both off).
    func listenerDone(watch: () -> Void) {
        lock.withLock {
            listenerReading = false
            watch()
        }
    }

    /// The listening connection is up; `send` sends a Sync on it.
    func connected(send: @escaping @Sendable () -> Void) {
        connected(SendingLink(sending: send))
    }

    /// The listening connection is up.
    func connected(_ link: any ListenerLink) {
        lock.lock()
        self.link = link
        inFlight = nil
        listenerReading = false
        driving = false
        lock.unlock()
    }

    /// The listening connection is lost: every waiting poll fails (it cannot tell).
    func lost() {
        lock.lock()
        link = nil
        inFlight = nil
        listenerReading = false
        let failed = waiters
        waiters.removeAll()
        lock.unlock()
        for waiter in failed { waiter.semaphore.signal() }
    }
}
