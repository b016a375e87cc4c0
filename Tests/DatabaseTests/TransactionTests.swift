import Testing

@testable import Database

/// A transaction sent whole in one pipeline goes without BEGIN and COMMIT (the pipeline's
/// implicit transaction, committed at its Sync), against the test stack's PostgreSQL.
@Suite(.enabled(if: TestDatabase.conninfo != nil, "needs TIDEWAY_TEST_DATABASE (make test)"))
struct TransactionTests {
    /// SAVEPOINT is refused outside a transaction block (25P01): it tells whether BEGIN went out.
    @Test func aTransactionSentWholeGoesWithoutBeginAndOneInTwoTripsKeepsIt() throws {
        let connection = try Connection(conninfo: TestDatabase.conninfo!)
        var failure: DatabaseError?
        do {
            _ = try connection.transaction { tx in try tx.query("savepoint probe", thenCommit: true) }
        } catch let error as DatabaseError { failure = error }
        #expect(failure?.sqlState == "25P01")
        // Two round trips: BEGIN went with the first.
        try connection.transaction { tx in
            _ = try tx.query("select 1")
            _ = try tx.query("savepoint probe", thenCommit: true)
        }
        // Read-only and snapshot transactions keep their BEGIN (it says what they are).
        _ = try connection.transaction(readOnly: true) { tx in try tx.query("savepoint probe", thenCommit: true) }
    }

    @Test func itsStatementsAreOneTransactionCommittedAtTheSync() throws {
        let connection = try Connection(conninfo: TestDatabase.conninfo!)
        let ids = try connection.transaction { tx in
            try tx.queries(["select txid_current()::text as id", "select txid_current()::text as id"], thenCommit: true)
        }.map { $0.rows[0]["id"] }
        #expect(ids[0] != nil && ids[0] == ids[1])
        _ = try connection.execute("create temp table whole_tx (x int)")
        #expect(throws: DatabaseError.self) {
            try connection.transaction { tx in
                _ = try tx.queries(["insert into whole_tx values (1)", "select 1 / 0"], thenCommit: true)
            }
        }
        try connection.transaction { tx in _ = try tx.query("insert into whole_tx values (2)", thenCommit: true) }
        #expect(try connection.execute("select string_agg(x::text, ',') as xs from whole_tx").rows[0]["xs"] == "2")
    }

    /// A commit that fails is the Sync's error: thrown, in the commit phase, nothing kept. The
    /// drain after the last statement once ignored whatever came before the Sync's answer.
    @Test func aCommitThatFailsAtTheSyncIsThrown() throws {
        let connection = try Connection(conninfo: TestDatabase.conninfo!)
        _ = try connection.pipeline([
            "create temp table whole_parent (id int primary key)",
            "create temp table whole_child (parent int references whole_parent deferrable initially deferred)",
        ])
        var failure: DatabaseError?
        do {
            try connection.transaction { tx in
                _ = try tx.queries(["insert into whole_child values (1)", "select 1"], thenCommit: true)
            }
        } catch let error as DatabaseError { failure = error }
        #expect(failure?.sqlState == "23503")
        #expect(failure?.phase == .commit)
        #expect(try connection.execute("select count(*)::text as n from whole_child").rows[0]["n"] == "0")
        // The connection is ready for the next transaction.
        let n = try connection.transaction { tx in try tx.query("select 2 as n", thenCommit: true).rows[0]["n"] }
        #expect(n == "2")
    }
}

/// `ConnectionPool.withEach`: distinct connections, as many as asked and the pool holds,
/// all given back.
@Suite(.enabled(if: TestDatabase.conninfo != nil, "needs TIDEWAY_TEST_DATABASE (make test)"))
struct PoolEachTests {
    @Test func eachIsADistinctConnectionAndAllComeBack() throws {
        let pool = ConnectionPool(conninfo: TestDatabase.conninfo!, capacity: 3)
        var backends: [String] = []
        let ran = try pool.withEach(5) { backends.append(try $0.execute("select pg_backend_pid()::text as p").rows[0]["p"] ?? "") }
        #expect(ran == 3 && Set(backends).count == 3)
        // Given back: three more borrows at once find the same three.
        var again: [String] = []
        try pool.withEach(3) { again.append(try $0.execute("select pg_backend_pid()::text as p").rows[0]["p"] ?? "") }
        #expect(Set(again) == Set(backends))
    }
}
