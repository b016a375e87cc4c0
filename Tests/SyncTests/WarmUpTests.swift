import Database
import Foundation
import Testing

@testable import Sync

/// The worker's warm-up at start (`WarmUp`): best effort, rolled back, nothing left on the
/// connections it hands back to the pool. What it leaves in the database is checked end to
/// end (Tests/EndToEnd/test_warm_up.py), as a superuser who sees every row.
struct WarmUpTests {
    @Test func aDatabaseThatIsNotThereIsAWarningNotAFailure() {
        let pool = ConnectionPool(conninfo: "host=/nonexistent dbname=tideway connect_timeout=1", capacity: 4)
        let outcome = WarmUp.writePath(pool)
        #expect(outcome.warmed == 0)
        #expect(outcome.failure != nil)
    }

    @Test(.enabled(if: CatalogDatabase.conninfo != nil, "needs TIDEWAY_TEST_DATABASE (make test)"))
    func warmsDistinctConnectionsAndHandsThemBackClean() throws {
        let pool = ConnectionPool(conninfo: CatalogDatabase.conninfo!, capacity: 8)
        let outcome = WarmUp.writePath(pool)
        #expect(outcome.failure == nil)
        #expect(outcome.warmed == WarmUp.connections)
        // Each connection is out of its transaction, its claims and settings gone: the next
        // request on it starts as on a new one.
        try pool.withEach(WarmUp.connections) { connection in
            let row = try connection.execute("""
                select coalesce(current_setting('tideway.user_id', true), '') as uid,
                       coalesce(current_setting('tideway.device', true), '') as device,
                       current_setting('statement_timeout') as timeout, app.uid() is null as nobody
                """).rows[0]
            #expect(row["uid"] == "" && row["device"] == "" && row["timeout"] == "0" && row.bool("nobody") == true)
        }
        // A pool of one warms its one connection.
        #expect(WarmUp.writePath(ConnectionPool(conninfo: CatalogDatabase.conninfo!, capacity: 1)).warmed == 1)
    }

    @Test(.enabled(if: CatalogDatabase.conninfo != nil, "needs TIDEWAY_TEST_DATABASE (make test)"))
    func whatThePoolRunsOnAConnectionOpenedLaterLeavesItWarmAndClean() throws {
        // `connectionsOpenedLater` has the pool run `warm` (when, is ConnectionPoolTests'; that
        // the worker does, test_warm_up.py's). The pull's statements, prepared on the
        // connection (its write path leaves nothing a session can see): the session-only
        // trace that it ran.
        let connection = try Connection(conninfo: CatalogDatabase.conninfo!)
        let pullPrepared: SQL = "select count(*)::text as n from pg_prepared_statements where statement like '%app.can_read(p.name)%'"
        #expect(try connection.execute(pullPrepared).rows[0]["n"] == "0")
        try WarmUp.warm(connection, until: .now() + .seconds(Int(WarmUp.budgetSeconds)))
        let row = try connection.execute("""
            select (\(pullPrepared)) as pull, coalesce(current_setting('tideway.user_id', true), '') as uid,
                   coalesce(current_setting('tideway.agency', true), '') as agency,
                   current_setting('statement_timeout') as timeout, app.uid() is null as nobody
            """).rows[0]
        #expect(row["pull"] == "1")
        #expect(row["uid"] == "" && row["agency"] == "" && row["timeout"] == "0" && row.bool("nobody") == true)
    }

    @Test func theWarmUpStopsAtItsDeadline() throws {
        // No time left: nothing is sent (no connection is even needed to tell).
        #expect(throws: WarmUp.OutOfTime.self) { try WarmUp.timeout(statements: 1, until: .now()) }
        // Plenty left: each statement's bound is the usual one.
        #expect(try WarmUp.timeout(statements: 3, until: .now() + .seconds(10)).binds == [String(WarmUp.statementTimeoutMilliseconds)])
        // 0.4 s left for three statements and the setting: each gets at most a quarter.
        let share = try WarmUp.timeout(statements: 3, until: .now() + .milliseconds(400)).binds.first.flatMap { $0.flatMap { Int($0) } }
        #expect(share.map { $0 > 0 && $0 <= 100 } == true)
    }

    @Test(.enabled(if: CatalogDatabase.conninfo != nil, "needs TIDEWAY_TEST_DATABASE (make test)"))
    func aWarmUpWithNoTimeLeftWarmsNothingAndSaysSo() {
        let outcome = WarmUp.writePath(ConnectionPool(conninfo: CatalogDatabase.conninfo!, capacity: 2), budget: 0)
        #expect(outcome.warmed == 0)
        #expect(outcome.failure?.contains("spent") == true)
    }

    @Test(.enabled(if: CatalogDatabase.conninfo != nil, "needs TIDEWAY_TEST_DATABASE (make test)"))
    func theFunctionUndoesItselfInsideItsCallersTransaction() throws {
        let connection = try Connection(conninfo: CatalogDatabase.conninfo!)
        // In the caller's transaction, right after the call, nothing of the made-up push is
        // left: its claims and device (set for the transaction) went with the function's own
        // block, which is what undoes its writes too (0105) — even a caller that commits.
        let row = try connection.transaction { tx in
            try tx.queries([
                "select app.warm_up_write_path()",
                """
                select coalesce(current_setting('tideway.user_id', true), '') as uid,
                       coalesce(current_setting('tideway.agency', true), '') as agency,
                       coalesce(current_setting('tideway.device', true), '') as device
                """,
            ], thenCommit: true)[1].rows[0]
        }
        #expect(row["uid"] == "" && row["agency"] == "" && row["device"] == "")
    }
}
