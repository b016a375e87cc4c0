import Foundation
import Testing

@testable import Database

/// `ConnectionPool.warmsConnectionsOpenedLater`: a connection the pool opens is warmed once,
/// on another thread than its borrower's, before it is lent again, and only while another
/// connection lies idle. The warm-up here leaves a marker only its session can see (a
/// prepared statement); the worker's own is tested in Tests/SyncTests/WarmUpTests.swift.
@Suite(.enabled(if: TestDatabase.conninfo != nil, "needs TIDEWAY_TEST_DATABASE (make test)"))
struct ConnectionPoolTests {
    static func marked(_ connection: Connection) throws -> Bool {
        try connection.execute("select count(*)::text as n from pg_prepared_statements where name = 'pool_warmed'").rows[0]["n"] == "1"
    }

    /// A pool whose one connection was warmed at start (`withEach`), then `warm` installed,
    /// held back by `release` until the test lets it run.
    static func pool(capacity: Int, runs: Locked<Int>, release: DispatchSemaphore) throws -> ConnectionPool {
        let pool = ConnectionPool(conninfo: TestDatabase.conninfo!, capacity: capacity)
        try pool.withEach(1) { _ in }
        pool.warmsConnectionsOpenedLater { connection in
            release.wait()
            _ = try? connection.execute("prepare pool_warmed as select 1")
            runs.withLock { $0 += 1 }
        }
        return pool
    }

    @Test func aConnectionOpenedLaterIsWarmedOffItsBorrowerBeforeItIsLentAgain() throws {
        let runs = Locked(0)
        let release = DispatchSemaphore(value: 0)
        let pool = try Self.pool(capacity: 2, runs: runs, release: release)
        // The start's connection held by another thread: the borrower below gets a new one.
        let holding = DispatchSemaphore(value: 0), letGo = DispatchSemaphore(value: 0), gone = DispatchSemaphore(value: 0)
        Thread {
            try? pool.withConnection { _ in
                holding.signal()
                letGo.wait()
            }
            gone.signal()
        }.start()
        holding.wait()
        // Its first borrower meets it as opened; the start's connection is back before it is,
        // and it returns without waiting for the warm-up (held back until below).
        let first = try pool.withConnection { connection -> Bool in
            letGo.signal()
            gone.wait()
            return try Self.marked(connection)
        }
        #expect(first == false)
        #expect(runs.withLock { $0 } == 0)
        release.signal()
        // Two at once (the pool's two): the second waits for the warm-up and finds it warm.
        let second = try pool.withConnection { _ in try pool.withConnection { try Self.marked($0) } }
        #expect(second == true)
        #expect(runs.withLock { $0 } == 1)
        // Once per connection: lent again, not warmed again.
        try pool.withConnection { _ in try pool.withConnection { _ in } }
        #expect(runs.withLock { $0 } == 1)
    }

    @Test func withNoOtherConnectionIdleItGoesBackColdRatherThanMakeTheNextBorrowerOpenOne() throws {
        let runs = Locked(0)
        let release = DispatchSemaphore(value: 1)
        let pool = try Self.pool(capacity: 2, runs: runs, release: release)
        // The start's connection and a new one, given back new one first (nothing idle then).
        try pool.withConnection { _ in try pool.withConnection { _ in } }
        #expect(runs.withLock { $0 } == 0)
        // Both at once: the same two, without waiting for a warm-up; the cold one was not warmed.
        let marks = try pool.withConnection { a in try pool.withConnection { b in [try Self.marked(a), try Self.marked(b)] } }
        #expect(marks.filter { $0 }.count == 0)
    }

    @Test func connectionsWithEachRanOnAreNotWarmedAgain() throws {
        let pool = ConnectionPool(conninfo: TestDatabase.conninfo!, capacity: 2)
        try pool.withEach(2) { _ in }
        let runs = Locked(0)
        pool.warmsConnectionsOpenedLater { _ in runs.withLock { $0 += 1 } }
        // Both held at once: the two connections withEach ran on, no new one.
        try pool.withEach(2) { _ in }
        try pool.withConnection { _ in }
        #expect(runs.withLock { $0 } == 0)
    }
}

/// `ConnectionPool.closesIdleConnections`: connections idle longer than the limit are closed,
/// oldest first, down to the floor, and their PostgreSQL backends end; lent ones never are.
/// `closeIdle(now:)` is called with a later time instead of waiting out the limit, except in
/// the last test, which lets the pool's own timer do it.
@Suite(.enabled(if: TestDatabase.conninfo != nil, "needs TIDEWAY_TEST_DATABASE (make test)"))
struct ConnectionPoolShrinkTests {
    static let limit = 60.0
    static var pastTheLimit: DispatchTime { .now() + .seconds(Int(limit) + 1) }

    /// A pool holding `count` connections, all idle (given back in the order opened), and
    /// their backends' pids in that order.
    static func pool(capacity: Int, opened count: Int, keeping floor: Int) throws -> (ConnectionPool, [Int]) {
        let pool = ConnectionPool(conninfo: TestDatabase.conninfo!, capacity: capacity)
        var pids: [Int] = []
        try pool.withEach(count) { pids.append(try backend(of: $0)) }
        pool.closesIdleConnections(after: limit, keeping: floor)
        return (pool, pids)
    }

    static func backend(of connection: Connection) throws -> Int {
        Int(try connection.execute("select pg_backend_pid()::text as pid").rows[0]["pid"]!)!
    }

    /// Those of `pids` PostgreSQL still runs, once the ones told to end have (a backend
    /// exits shortly after its client's goodbye, not with it).
    static func running(_ pids: [Int], expecting count: Int, on pool: ConnectionPool) throws -> Set<Int> {
        var found = Set<Int>()
        for _ in 0..<200 {
            found = Set(try pool.withConnection { connection in
                let list = pids.map(String.init).joined(separator: ",")
                return try connection.execute("select pid::text from pg_stat_activity where pid = any(string_to_array(\(list), ',')::int[])")
                    .rows.compactMap { $0["pid"].flatMap(Int.init) }
            })
            if found.count == count { break }
            usleep(20_000)
        }
        return found
    }

    @Test func connectionsIdleBeyondTheLimitCloseOldestFirstDownToTheFloor() throws {
        let (pool, pids) = try Self.pool(capacity: 4, opened: 4, keeping: 2)
        // Not idle long enough yet.
        #expect(pool.closeIdle() == 0)
        #expect(pool.counts == (4, 4))
        #expect(pool.closeIdle(now: Self.pastTheLimit) == 2)
        #expect(pool.counts == (2, 2))
        // The two given back last stay (the first two opened were given back first); the
        // others' backends are gone.
        #expect(try Self.running(pids, expecting: 2, on: pool) == Set(pids[2...]))
        // At the floor: nothing more, however long they idle.
        #expect(pool.closeIdle(now: Self.pastTheLimit + .seconds(3600)) == 0)
        #expect(pool.counts == (2, 2))
    }

    @Test func lentConnectionsAreNeverClosedAndCountTowardTheFloor() throws {
        let (pool, _) = try Self.pool(capacity: 3, opened: 3, keeping: 1)
        let closed = try pool.withConnection { a in
            try pool.withConnection { b in
                // Two lent, one idle: only the idle one goes, although the floor is one.
                let closed = pool.closeIdle(now: Self.pastTheLimit)
                #expect(pool.counts == (2, 0))
                // The lent ones were not touched.
                let answers = try [a, b].map { try $0.execute("select 1 as one").rows[0]["one"] }
                #expect(answers == ["1", "1"])
                return closed
            }
        }
        #expect(closed == 1)
        #expect(pool.counts == (2, 2))
        #expect(pool.closeIdle(now: Self.pastTheLimit) == 1)
        #expect(pool.counts == (1, 1))
    }

    @Test func aShrunkPoolServesAndGrowsAgain() throws {
        let (pool, pids) = try Self.pool(capacity: 3, opened: 3, keeping: 1)
        #expect(pool.closeIdle(now: Self.pastTheLimit) == 2)
        // Three at once again: the one kept and two new ones, all answering.
        let now = try pool.withConnection { a in
            try pool.withConnection { b in
                try pool.withConnection { c in try [a, b, c].map { try Self.backend(of: $0) } }
            }
        }
        #expect(Set(now).count == 3)
        #expect(Set(now).intersection(pids) == [pids[2]])
        #expect(pool.counts == (3, 3))
    }

    @Test func offKeepsEveryConnection() throws {
        let pool = ConnectionPool(conninfo: TestDatabase.conninfo!, capacity: 2)
        try pool.withEach(2) { _ in }
        pool.closesIdleConnections(after: 0, keeping: 0)
        #expect(pool.closeIdle(now: .now() + .seconds(86_400)) == 0)
        #expect(pool.counts == (2, 2))
    }

    @Test func thePoolsTimerClosesThemUnasked() throws {
        let pool = ConnectionPool(conninfo: TestDatabase.conninfo!, capacity: 3)
        try pool.withEach(3) { _ in }
        pool.closesIdleConnections(after: 0.1, keeping: 1)
        // The timer runs every 0.05 s; a loaded host may delay it, not this test's outcome.
        for _ in 0..<600 where pool.counts.open > 1 { usleep(50_000) }
        #expect(pool.counts == (1, 1))
        #expect(try pool.withConnection { try $0.execute("select 1 as one").rows[0]["one"] } == "1")
    }
}

/// A value shared with the pool's warm-up thread and the test's threads.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<T>(_ body: (inout Value) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}
