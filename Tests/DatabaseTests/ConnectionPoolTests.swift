import Foundation
import Testing

@testable import Database

/// `ConnectionPool.warmsConnectionsOpenedLater`: a connection the pool opens is warmed once,
/// on another thread than its borrower's, before it is lent again. The warm-up here leaves a
/// marker only its session can see (a prepared statement); the worker's own is tested in
/// Tests/SyncTests/WarmUpTests.swift.
@Suite(.enabled(if: TestDatabase.conninfo != nil, "needs TIDEWAY_TEST_DATABASE (make test)"))
struct ConnectionPoolTests {
    static func marked(_ connection: Connection) throws -> Bool {
        try connection.execute("select count(*)::text as n from pg_prepared_statements where name = 'pool_warmed'").rows[0]["n"] == "1"
    }

    @Test func aConnectionOpenedLaterIsWarmedOffItsBorrowerBeforeItIsLentAgain() throws {
        let pool = ConnectionPool(conninfo: TestDatabase.conninfo!, capacity: 1)
        let release = DispatchSemaphore(value: 0)
        let runs = Locked(0)
        pool.warmsConnectionsOpenedLater { connection in
            // Held here until the test lets it go: the borrower below has returned by then.
            release.wait()
            _ = try? connection.execute("prepare pool_warmed as select 1")
            runs.withLock { $0 += 1 }
        }
        // Its first borrower meets it as opened, and returns without waiting for the warm-up.
        let first = try pool.withConnection { try Self.marked($0) }
        #expect(first == false)
        #expect(runs.withLock { $0 } == 0)
        // A borrower while it warms waits for it (the pool's one connection), and finds it warm.
        let found = Locked<Bool?>(nil)
        let borrower = Thread {
            let marked = try? pool.withConnection { try Self.marked($0) }
            found.withLock { $0 = marked }
        }
        borrower.start()
        usleep(100_000)
        #expect(found.withLock { $0 } == nil)
        release.signal()
        while found.withLock({ $0 }) == nil { usleep(1_000) }
        #expect(found.withLock { $0 } == true)
        // Once per connection: lent again, not warmed again.
        try pool.withConnection { _ in }
        #expect(runs.withLock { $0 } == 1)
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

/// A value shared with the pool's warm-up thread and the test's borrower thread.
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
