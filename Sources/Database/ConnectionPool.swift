import Foundation

/// The process's database connections. Threads borrow one per request; a broken one is
/// dropped and replaced on the next borrow, so workers survive a PostgreSQL restart
/// without being restarted themselves. Told to (`closesIdleConnections`), it closes the
/// connections a burst opened once they have lain idle long enough, down to a floor.
///
/// `@unchecked Sendable`: every stored property below `condition` is read and written
/// only while `condition` is locked, and a connection is used by one thread at a time
/// (it moves from the pool to a borrower and back under that lock).
public final class ConnectionPool: @unchecked Sendable {
    private let conninfo: String
    private let capacity: Int
    private let condition = NSCondition()
    /// Oldest given back first: borrowers take from the end (the one given back last, whose
    /// backend's caches are the freshest), so those a burst opened and no one needed since
    /// sink to the front, where `closeIdle` takes them from.
    private var idle: [(connection: Connection, since: DispatchTime)] = []
    private var open = 0
    /// Tests only: the one connection every borrower gets (see `Connection.nesting`).
    private let pinned: Connection?
    /// Runs once on each connection opened after `warmsConnectionsOpenedLater` (nil: none).
    private var warmUp: (@Sendable (Connection) -> Void)?
    /// One warm-up at a time, off the requests' threads.
    private let warming = DispatchQueue(label: "tideway.pool.warm-up", qos: .utility)
    /// Set by `closesIdleConnections`: a connection idle this long is closed, while more than
    /// `floor` are open; nil: never (each one stays open until it breaks).
    private var idleLimit: (nanoseconds: UInt64, floor: Int)?
    /// Runs `closeIdle` now and then, on its own utility queue (never a request's thread).
    private var closing: (any DispatchSourceTimer)?

    /// What the pools of this process report (set once at start, before any borrow: the
    /// worker sends it to its metrics). This target knows no metrics.
    public enum Event: Sendable {
        /// A borrow waited this long for a connection to come back.
        case waited(seconds: Double)
        /// A connection could not be opened.
        case connectFailed
        /// Connections held open went up or down by this many.
        case openChanged(Int)
        /// This many idle connections were closed for having idled too long.
        case closedIdle(Int)
    }
    nonisolated(unsafe) public static var observer: (@Sendable (Event) -> Void)?

    public init(conninfo: String, capacity: Int) {
        self.conninfo = conninfo
        self.capacity = max(1, capacity)
        pinned = nil
    }

    deinit { closing?.cancel() }

    /// Tests only: a pool of one connection, handed out whatever state it is in.
    package init(pinned connection: Connection) {
        conninfo = connection.conninfo
        capacity = 1
        pinned = connection
    }

    /// Borrows a connection for `body`; waits while all are in use.
    public func withConnection<T>(_ body: (Connection) throws -> T) throws -> T {
        if let pinned { return try body(pinned) }
        let connection = try borrow()
        defer { giveBack(connection) }
        return try body(connection)
    }

    /// Borrows up to `count` connections at once, opening those the pool does not hold yet,
    /// and runs `body` on each in turn; answers how many it ran on. For work done once per
    /// connection ahead of the requests that will borrow them (the worker's warm-up at
    /// start): held together, they are distinct connections, not one borrowed `count` times.
    /// Stops at the first connection that cannot be opened, and throws then if none could.
    @discardableResult
    public func withEach(_ count: Int, _ body: (Connection) throws -> Void) throws -> Int {
        if let pinned {
            try body(pinned)
            return 1
        }
        var borrowed: [Connection] = []
        var failure: DatabaseError?
        // A Result rather than a typed catch of `borrow`'s error: that crashes the 6.3 compiler.
        while borrowed.count < min(count, capacity), failure == nil {
            switch Result(catching: { () throws(DatabaseError) in try borrow() }) {
            case .success(let connection): borrowed.append(connection)
            case .failure(let error): failure = error
            }
        }
        defer {
            for connection in borrowed { giveBack(connection) }
        }
        if borrowed.isEmpty, let failure { throw failure }
        for connection in borrowed {
            // This work is the connection's warm-up: the pool does not run its own on it later.
            connection.warmedUp = true
            try body(connection)
        }
        return borrowed.count
    }

    /// From now on, each connection the pool opens runs `warm` once, on a background thread,
    /// after a borrower gives it back while another connection lies idle, and before it is
    /// lent again. A pool opens connections under a burst (up to one per thread) and lends
    /// the one given back last first, so without it a write could land on a connection that
    /// only ever served reads and pay that connection's first write (docs/performance/round-12.md,
    /// "Connections the pool opens later"). Its first borrower still meets it cold, as it
    /// would meet any connection opened for it: warming before that first lend would put the
    /// warm-up on that request. Connections `withEach` ran on count as warmed. Set once at
    /// start, before requests.
    public func warmsConnectionsOpenedLater(_ warm: @escaping @Sendable (Connection) -> Void) {
        condition.lock()
        warmUp = warm
        condition.unlock()
    }

    /// From now on, a connection that has lain idle in the pool for `seconds` is closed (its
    /// PostgreSQL backend ends, and the memory its caches held with it), as long as more than
    /// `floor` connections are open, lent ones included. A burst opens connections up to
    /// capacity, one per thread; without this each stayed open, idle, for the process's life
    /// (docs/performance/round-13.md, "The pool gives back what a burst opened"). Lent connections
    /// and those being warmed are not idle, so never closed; a burst after a shrink opens
    /// (and warms) connections again as the first one did. The check runs on a utility
    /// thread every `seconds / 2`, at least once a minute, so a connection goes between
    /// `seconds` and 1.5 × `seconds` (`seconds` + 1 min for long limits) after its last use;
    /// nothing of it runs on a request's thread but the time noted at each give-back.
    /// `seconds` ≤ 0: never. Set once at start, before requests.
    public func closesIdleConnections(after seconds: Double, keeping floor: Int) {
        guard seconds > 0, pinned == nil else { return }
        let every = min(seconds / 2, 60)
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "tideway.pool.close-idle", qos: .utility))
        timer.schedule(deadline: .now() + every, repeating: every, leeway: .nanoseconds(Int(every * 1e8)))
        // Weak: a pool no one holds any more (tests make many) goes, and its timer with it.
        timer.setEventHandler { [weak self] in self?.closeIdle() }
        condition.lock()
        idleLimit = (UInt64(seconds * 1e9), max(0, floor))
        closing = timer
        condition.unlock()
        timer.resume()
    }

    /// Closes the connections idle since before `now` minus the limit, oldest first, while
    /// more than the floor are open; answers how many. Run by the timer; tests call it with
    /// a later `now` instead of waiting. The backends are told to end (PQfinish) after the
    /// pool's lock is released: a borrower never waits for that.
    @discardableResult
    package func closeIdle(now: DispatchTime = .now()) -> Int {
        condition.lock()
        guard let (limit, floor) = idleLimit else {
            condition.unlock()
            return 0
        }
        var stale = 0
        while stale < idle.count, open - stale > floor,
              idle[stale].since.uptimeNanoseconds + limit <= now.uptimeNanoseconds {
            stale += 1
        }
        let closed = idle[..<stale].map(\.connection)
        idle.removeFirst(stale)
        open -= stale
        condition.unlock()
        guard stale > 0 else { return 0 }
        Self.observer?(.openChanged(-stale))
        Self.observer?(.closedIdle(stale))
        // Their last references, released here rather than under the lock (where removing
        // them from `idle` would otherwise end them): each one's deinit ends its session.
        withExtendedLifetime(closed) {}
        return stale
    }

    /// Tests only: connections open (lent, idle or being warmed) and idle.
    package var counts: (open: Int, idle: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (open, idle.count)
    }

    private func borrow() throws(DatabaseError) -> Connection {
        condition.lock()
        if idle.isEmpty && open >= capacity {
            let started = DispatchTime.now()
            while idle.isEmpty && open >= capacity { condition.wait() }
            Self.observer?(.waited(seconds: Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9))
        }
        if let (connection, _) = idle.popLast() {
            if connection.isOpenAndQuiet {
                condition.unlock()
                return connection
            }
            open -= 1
            Self.observer?(.openChanged(-1))
        }
        open += 1
        condition.unlock()
        do {
            let connection = try Connection(conninfo: conninfo)
            Self.observer?(.openChanged(1))
            return connection
        } catch {
            condition.lock()
            open -= 1
            condition.signal()
            condition.unlock()
            Self.observer?(.connectFailed)
            throw error
        }
    }

    private func giveBack(_ connection: Connection) {
        condition.lock()
        if connection.isHealthy && !connection.inTransaction {
            // Only while another connection lies idle for the next borrower: with none, that
            // borrower would open one more (a burst would climb to capacity, each connection
            // warmed at its first return); this one goes back cold and is warmed at a later
            // return instead.
            if let warmUp, !connection.warmedUp, !idle.isEmpty {
                // Still counted open, not idle: a borrower at capacity waits for it.
                connection.warmedUp = true
                condition.unlock()
                let warmed = Lent(connection: connection)
                warming.async { [self] in
                    warmUp(warmed.connection)
                    giveBack(warmed.connection)
                }
                return
            }
            idle.append((connection, .now()))
        } else {
            open -= 1
            Self.observer?(.openChanged(-1))
        }
        condition.signal()
        condition.unlock()
    }
}

/// A connection on its way to the warm-up thread and back: used by one thread at a time, as
/// every connection of the pool is.
private struct Lent: @unchecked Sendable {
    let connection: Connection
}
