import Foundation

/// The process's database connections. Threads borrow one per request; a broken one is
/// dropped and replaced on the next borrow, so workers survive a PostgreSQL restart
/// without being restarted themselves.
///
/// `@unchecked Sendable`: every stored property below `condition` is read and written
/// only while `condition` is locked, and a connection is used by one thread at a time
/// (it moves from the pool to a borrower and back under that lock).
public final class ConnectionPool: @unchecked Sendable {
    private let conninfo: String
    private let capacity: Int
    private let condition = NSCondition()
    private var idle: [Connection] = []
    private var open = 0
    /// Tests only: the one connection every borrower gets (see `Connection.nesting`).
    private let pinned: Connection?
    /// Runs once on each connection opened after `warmsConnectionsOpenedLater` (nil: none).
    private var warmUp: (@Sendable (Connection) -> Void)?
    /// One warm-up at a time, off the requests' threads.
    private let warming = DispatchQueue(label: "tideway.pool.warm-up", qos: .utility)

    /// What the pools of this process report (set once at start, before any borrow: the
    /// worker sends it to its metrics). This target knows no metrics.
    public enum Event: Sendable {
        /// A borrow waited this long for a connection to come back.
        case waited(seconds: Double)
        /// A connection could not be opened.
        case connectFailed
        /// Connections held open went up or down by this many.
        case openChanged(Int)
    }
    nonisolated(unsafe) public static var observer: (@Sendable (Event) -> Void)?

    public init(conninfo: String, capacity: Int) {
        self.conninfo = conninfo
        self.capacity = max(1, capacity)
        pinned = nil
    }

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
    /// only ever served reads and pay that connection's first write (docs/performance.md,
    /// "Connections the pool opens later"). Its first borrower still meets it cold, as it
    /// would meet any connection opened for it: warming before that first lend would put the
    /// warm-up on that request. Connections `withEach` ran on count as warmed. Set once at
    /// start, before requests.
    public func warmsConnectionsOpenedLater(_ warm: @escaping @Sendable (Connection) -> Void) {
        condition.lock()
        warmUp = warm
        condition.unlock()
    }

    private func borrow() throws(DatabaseError) -> Connection {
        condition.lock()
        if idle.isEmpty && open >= capacity {
            let started = DispatchTime.now()
            while idle.isEmpty && open >= capacity { condition.wait() }
            Self.observer?(.waited(seconds: Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9))
        }
        if let connection = idle.popLast() {
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
            idle.append(connection)
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
