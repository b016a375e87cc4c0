import Testing

@testable import Database

/// `Connection.pipeline(_:streaming:row:)`: a statement's rows handed over as they arrive
/// (the pull's streamed answer), against the test stack's PostgreSQL.
@Suite(.enabled(if: TestDatabase.conninfo != nil, "needs TIDEWAY_TEST_DATABASE (make test)"))
struct StreamedRowsTests {
    @Test func theStreamedStatementsRowsArriveInOrderAndTheOthersAreCollected() throws {
        let connection = try Connection(conninfo: TestDatabase.conninfo!)
        var seen: [String] = []
        let results = try connection.pipeline(
            ["select 1 as a", "select g::text as n, null::text as nothing from generate_series(1, 1000) g", "select 2 as b"],
            streaming: [1]
        ) { statement, row in
            #expect(statement == 1)
            #expect(row[1] == nil)
            seen.append(row[0] ?? "")
        }
        #expect(seen == (1...1000).map(String.init))
        #expect(results.count == 3)
        #expect(results[0].rows.first?["a"] == "1")
        #expect(results[1].rows.isEmpty && results[1].columns == ["n", "nothing"])
        #expect(results[2].rows.first?["b"] == "2")
    }

    @Test func aFailureAfterSomeRowsIsThrownOnceTheRowsBeforeItWereHandedOver() throws {
        let connection = try Connection(conninfo: TestDatabase.conninfo!)
        var count = 0
        var failure: DatabaseError?
        do {
            _ = try connection.pipeline(
                ["select case when g < 500 then g else 1 / (g - g) end as n from generate_series(1, 1000) g", "select 1"],
                streaming: [0]
            ) { _, _ in count += 1 }
        } catch {
            failure = error
        }
        #expect(failure?.sqlState == "22012" && failure?.statementIndex == 0)
        // What came before the failure was handed over: the caller must know it is incomplete.
        #expect(count > 0 && count < 500)
        // The connection is ready for the next pipeline.
        #expect(try connection.execute("select 3 as n").rows.first?["n"] == "3")
    }

    @Test func aStreamedTransactionsOpeningCountsAsItsStatementsDo() throws {
        let connection = try Connection(conninfo: TestDatabase.conninfo!)
        var seen: [Int] = []
        let results = try connection.transaction(readOnly: true, opening: ["select 'opening' as o"]) { tx in
            try tx.queries(["select 10 as n", "select g from generate_series(1, 3) g"], thenCommit: true, streaming: [1]) { statement, _ in
                seen.append(statement)
            }
        }
        #expect(seen == [1, 1, 1])
        #expect(results.count == 2 && results[0].rows.first?["n"] == "10" && results[1].rows.isEmpty)
    }
}
