import Foundation
import Testing

@testable import Database

/// Typed statement batches, typed rows, and errors that say in which phase they happened,
/// against the test stack's PostgreSQL.
@Suite(.enabled(if: TestDatabase.conninfo != nil, "needs TIDEWAY_TEST_DATABASE (make test)"))
struct StatementTests {
    struct Pair: RowDecodable, Equatable {
        let n: Int
        let label: String?
        init(n: Int, label: String?) { self.n = n; self.label = label }
        init(row: Row) throws(DatabaseError) {
            n = try row.decode("n")
            label = try row.decodeIfPresent("label")
        }
    }

    @Test func aBatchAnswersATupleOfTypedAnswers() throws {
        let connection = try Connection(conninfo: TestDatabase.conninfo!)
        let (pairs, first, none, flag) = try connection.transaction(readOnly: true) { tx in
            try tx.run(
                Statement.rows("select n, case when n = 2 then null else 'x' || n end as label from generate_series(1, 3) n", as: Pair.self),
                Statement.first("select 7 as n, 'seven' as label", as: Pair.self),
                Statement.first("select 1 as n where false", as: Pair.self),
                Statement("select true as ok") { result throws(DatabaseError) in try result.first?.decode("ok", as: Bool.self) })
        }
        #expect(pairs == [Pair(n: 1, label: "x1"), Pair(n: 2, label: nil), Pair(n: 3, label: "x3")])
        #expect(first == Pair(n: 7, label: "seven") && none == nil && flag == true)
    }

    @Test func aMissingOrMalformedColumnIsAnErrorNotADefault() throws {
        let connection = try Connection(conninfo: TestDatabase.conninfo!)
        #expect(throws: DatabaseError.self) {
            try connection.transaction { tx in try tx.run(Statement.first("select 'seven' as n", as: Pair.self)) }
        }
        #expect(throws: DatabaseError.self) {
            try connection.transaction { tx in try tx.run(Statement.first("select null::int as n", as: Pair.self)) }
        }
    }

    @Test func errorsSayTheirPhase() throws {
        var failure: DatabaseError?
        do { _ = try Connection(conninfo: "host=/nonexistent-\(UUID().uuidString) dbname=x connect_timeout=1") } catch {
            failure = error
        }
        #expect(failure?.phase == .connect)

        let connection = try Connection(conninfo: TestDatabase.conninfo!)
        #expect(phase { try connection.transaction(opening: ["select 1/0"]) { tx in _ = try tx.query("select 1") } } == .authenticate)
        #expect(phase { try connection.transaction { tx in _ = try tx.query("select 1/0") } } == .statement)
        // A deferred constraint fails at COMMIT, when the statement itself was fine.
        #expect(phase {
            try connection.transaction { tx in
                _ = try tx.queries([
                    "create temporary table deferred_check (id int primary key, parent int references deferred_check deferrable initially deferred)",
                    "insert into deferred_check values (1, 2)",
                ])
            }
        } == .commit)
    }

    func phase(_ body: () throws -> Void) -> DatabaseError.Phase? {
        do { try body() } catch let error as DatabaseError { return error.phase } catch {}
        return nil
    }
}

enum TestDatabase {
    static let conninfo = ProcessInfo.processInfo.environment["TIDEWAY_TEST_DATABASE"]
}
