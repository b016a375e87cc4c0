/// One transaction of one request. The opening statements (BEGIN and the caller's claims)
/// are not sent on their own: they ride with the first query, so a request that reads
/// one thing costs one round trip (two with the commit, one with `query(_:thenCommit:)`,
/// which then sends neither BEGIN nor COMMIT: `whole()`).
public final class Transaction {
    let connection: Connection
    private var pending: [SQL]
    private var openingCount: Int
    fileprivate(set) var finished = false
    /// The opening starts with a plain BEGIN that may be left out when the whole transaction
    /// goes in one pipeline (`queries(_:thenCommit:)`).
    private let beginMayBeOmitted: Bool

    init(connection: Connection, opening: [SQL], beginMayBeOmitted: Bool = false) {
        self.connection = connection
        self.pending = opening
        self.openingCount = opening.count
        self.beginMayBeOmitted = beginMayBeOmitted
    }

    /// Results of the opening statements (e.g. the claims function's answer), once sent.
    public private(set) var openingResults: [QueryResult] = []
    /// Why the opening statements failed, once they were sent and did.
    public private(set) var openingFailure: DatabaseError?

    /// The answer of the last statement sent.
    public private(set) var lastResult: QueryResult?

    public func query(_ statement: SQL) throws(DatabaseError) -> QueryResult {
        try queries([statement]).last!
    }

    /// Several statements in one round trip.
    public func queries(_ statements: [SQL]) throws(DatabaseError) -> [QueryResult] {
        try queries(statements, streaming: [], row: { _, _ in })
    }

    /// Several statements in one round trip, the rows of those at `streamed` (indices into
    /// `statements`) handed to `row` as they arrive (`Connection.pipeline(_:streaming:row:)`).
    public func queries(_ statements: [SQL], streaming streamed: Set<Int>,
                        row: (_ statement: Int, RawRow) -> Void) throws(DatabaseError) -> [QueryResult] {
        precondition(!finished, "transaction already finished")
        // The opening failed (e.g. an unknown token): everything after it fails the same way.
        if let openingFailure { throw openingFailure }
        let batch = pending + statements
        let offset = pending.count
        pending = []
        let results: [QueryResult]
        do {
            results = try connection.pipeline(batch, streaming: Set(streamed.map { $0 + offset })) { index, raw in
                row(index - offset, raw)
            }
        } catch var error {
            if let i = error.statementIndex {
                if i < openingCount {
                    error.phase = .authenticate
                    openingFailure = error
                } else if i == batch.count - 1, batch[i].text == connection.commitStatement.text {
                    error.phase = .commit
                } else if i == batch.count {
                    error.phase = .commit  // the implicit transaction's, at the Sync (`whole`)
                }
                error.statementIndex = i - openingCount
            }
            openingCount = 0
            throw error
        }
        lastResult = results.last
        if openingCount > 0 {
            openingResults = Array(results.prefix(openingCount))
            openingCount = 0
        }
        return Array(results.suffix(statements.count))
    }

    /// The last statements of a transaction and its commit in one round trip.
    public func queries(_ statements: [SQL], thenCommit: Bool) throws(DatabaseError) -> [QueryResult] {
        try queries(statements, thenCommit: thenCommit, streaming: [], row: { _, _ in })
    }

    /// The last statements of a transaction and its commit in one round trip, the rows of
    /// those at `streamed` handed to `row` as they arrive.
    public func queries(_ statements: [SQL], thenCommit: Bool, streaming streamed: Set<Int>,
                        row: (_ statement: Int, RawRow) -> Void) throws(DatabaseError) -> [QueryResult] {
        guard thenCommit else { return try queries(statements, streaming: streamed, row: row) }
        if whole() {
            let results = try queries(statements, streaming: streamed, row: row)
            finished = true
            return results
        }
        let results = try queries(statements + [connection.commitStatement], streaming: streamed, row: row)
        finished = true
        return Array(results.dropLast())
    }

    /// Whether the transaction goes in this one pipeline, nothing of it sent before, and may
    /// then go without BEGIN and COMMIT: the statements up to a pipeline's Sync are one
    /// implicit transaction, which PostgreSQL commits at the Sync, or rolls back when one of
    /// them fails (the same effects, snapshots and locks as between BEGIN and COMMIT; a failed
    /// commit is the Sync's error, `Connection.pipeline`). Two statements fewer for the
    /// server to parse, bind and run, and for libpq to send and read: a lone push is one
    /// such pipeline (docs/performance/round-08.md, "A lone push outside PostgreSQL"). Drops the BEGIN.
    private func whole() -> Bool {
        guard beginMayBeOmitted, openingCount > 0, openingCount == pending.count, openingResults.isEmpty,
              pending.first?.text == "begin" else { return false }
        pending.removeFirst()
        openingCount -= 1
        return true
    }

    /// The last statement of a transaction and its commit in one round trip.
    public func query(_ statement: SQL, thenCommit: Bool) throws(DatabaseError) -> QueryResult {
        try queries([statement], thenCommit: thenCommit)[0]
    }

    /// Sends what is still pending (the opening, if nothing was asked) so that its
    /// answers can be checked even when the body had nothing to read.
    public func flushOpening() throws(DatabaseError) {
        if !pending.isEmpty { _ = try queries([]) }
    }

    func commit() throws(DatabaseError) {
        guard !finished else { return }
        _ = try queries([connection.commitStatement])
        finished = true
    }

    /// True until the opening statements have gone out with a query.
    public var openingPending: Bool { openingCount > 0 }

    func rollback() {
        finished = true
        pending = []
        if connection.nesting != nil {
            _ = try? connection.pipeline(["rollback to savepoint request", "release savepoint request"])
        } else if connection.inTransaction {
            _ = try? connection.pipeline(["rollback"])
        }
    }
}

extension Connection {
    /// Runs `body` in one transaction whose first statements are `opening` (after BEGIN).
    /// Any error rolls back; a clean return commits.
    /// `snapshot`: one read-only snapshot for every statement (REPEATABLE READ), so that
    /// several partitions are read as of the same instant.
    public func transaction<T>(
        readOnly: Bool = false, snapshot: Bool = false, opening: [SQL] = [], _ body: (Transaction) throws -> T
    ) throws -> T {
        let begin: [SQL] =
            if let nesting { ["savepoint request"] + nesting }
            else { [snapshot ? "begin isolation level repeatable read read only" : readOnly ? "begin read only" : "begin"] }
        let tx = Transaction(connection: self, opening: begin + opening, beginMayBeOmitted: nesting == nil && !readOnly && !snapshot)
        do {
            let value = try body(tx)
            try tx.commit()
            return value
        } catch {
            tx.rollback()
            throw error
        }
    }
}

extension Connection {
    var commitStatement: SQL { nesting == nil ? "commit" : "release savepoint request" }
}
