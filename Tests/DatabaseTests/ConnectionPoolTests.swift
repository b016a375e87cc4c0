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
