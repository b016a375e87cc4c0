import Foundation
import Testing

@testable import Database

/// `SQL.reused()`: named statements prepared once per connection (the write path's fast
/// path, issue 22), against the test stack's PostgreSQL.
@Suite(.enabled(if: TestDatabase.conninfo != nil, "needs TIDEWAY_TEST_DATABASE (make test)"))
struct ReusedStatementTests {
    /// How many named statements the server holds for this connection.
    static func preparedCount(_ connection: Connection) throws -> Int {
        let result = try connection.execute("select count(*)::text as n from pg_prepared_statements where not from_sql")
        return Int(result.rows[0]["n"] ?? "") ?? -1
    }

    @Test func preparedOnceThenReusedWithNewValues() throws {
        let connection = try Connection(conninfo: TestDatabase.conninfo!)
        func twice(_ n: Int) -> SQL { .reused("select \(n) * 2 as n") }
        // The same text twice in one pipeline: prepared by the first, used by both.
        let first = try connection.pipeline([twice(1), twice(2)])
        #expect(first.map { $0.rows[0]["n"] } == ["2", "4"])
        #expect(try Self.preparedCount(connection) == 1)
        let again = try connection.pipeline([twice(21)])
        #expect(again[0].rows[0]["n"] == "42")
        #expect(try Self.preparedCount(connection) == 1)
        // Unmarked statements stay unnamed.
        _ = try connection.execute("select \(3) as n")
        #expect(try Self.preparedCount(connection) == 1)
    }

    @Test func aStatementThatDoesNotParseIsAnErrorAndIsNotKept() throws {
        let connection = try Connection(conninfo: TestDatabase.conninfo!)
        var failure: DatabaseError?
        do { _ = try connection.pipeline(["select 1 as n", .reused("selec \(1)")]) } catch { failure = error }
        #expect(failure?.statementIndex == 1 && failure?.sqlState == "42601")
        #expect(try Self.preparedCount(connection) == 0)
        // A statement prepared in a pipeline that an earlier statement aborted is not kept
        // either, and works when sent again.
        failure = nil
        do { _ = try connection.pipeline(["select 1 / 0", .reused("select \(5) as n")]) } catch { failure = error }
        #expect(failure?.statementIndex == 0)
        #expect(try Self.preparedCount(connection) == 0)
        let result = try connection.pipeline([.reused("select \(5) as n")])
        #expect(result[0].rows[0]["n"] == "5")
        #expect(try Self.preparedCount(connection) == 1)
    }

    @Test func preparedStatementsOutliveARolledBackTransaction() throws {
        let connection = try Connection(conninfo: TestDatabase.conninfo!)
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try connection.transaction { tx in
                _ = try tx.query(.reused("select \(1) as n"))
                throw Boom()
            }
        }
        let n = try connection.transaction { tx in try tx.query(.reused("select \(7) as n")).rows[0]["n"] }
        #expect(n == "7")
        #expect(try Self.preparedCount(connection) == 1)
    }
}
