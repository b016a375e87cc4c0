import CLibPQ
import Foundation

/// One libpq connection, always in pipeline mode: the statements of a step are sent
/// together and answered in one round trip. Not thread-safe; each FastCGI thread
/// borrows one from the pool for the length of a request.
public final class Connection {
    private var conn: OpaquePointer?
    public let conninfo: String
    /// Tests only: every `transaction` becomes a savepoint inside one outer transaction the
    /// test opened and rolls back, its opening statements preceded by `reset` (the claims a
    /// real transaction would have forgotten). nil: real transactions.
    package var nesting: [SQL]?
    /// Set by its pool once the pool's warm-up ran on it, or was tried (`ConnectionPool`).
    var warmedUp = false

    public init(conninfo: String) throws(DatabaseError) {
        self.conninfo = conninfo
        conn = PQconnectdb(conninfo)
        guard let conn, PQstatus(conn) == CONNECTION_OK else {
            let detail = conn.map { String(cString: PQerrorMessage($0)) } ?? "out of memory"
            PQfinish(conn)
            self.conn = nil
            var error = DatabaseError(kind: .unavailable, detail: detail)
            error.phase = .connect
            throw error
        }
        // Notices (e.g. "already exists, skipping") are not errors; keep them out of stderr.
        PQsetNoticeProcessor(conn, { _, _ in }, nil)
        guard PQenterPipelineMode(conn) == 1 else {
            throw DatabaseError(kind: .protocolViolation, detail: "cannot enter pipeline mode")
        }
    }

    deinit { PQfinish(conn) }

    /// False once the server went away: the pool drops the connection and opens a new one.
    public var isHealthy: Bool { conn.map { PQstatus($0) == CONNECTION_OK } ?? false }

    /// False when the server has ended this connection while it sat idle in the pool (a
    /// restart, `pg_terminate_backend`). libpq notices that only on the next use, which would
    /// then fail a request although the database is back. Nothing was asked of an idle
    /// connection, so anything to read on its socket is the server's goodbye (or at least
    /// nothing a later answer may be mixed up with): such a connection is not reused.
    public var isOpenAndQuiet: Bool {
        guard let conn, PQstatus(conn) == CONNECTION_OK else { return false }
        var socket = pollfd(fd: PQsocket(conn), events: Int16(POLLIN), revents: 0)
        return poll(&socket, 1, 0) == 0
    }

    /// True when the last pipeline left an open transaction block.
    var inTransaction: Bool {
        guard let conn else { return false }
        let status = PQtransactionStatus(conn)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
    }

    /// Sends the statements and one sync, then reads every answer. If one fails, the rest
    /// of the pipeline is skipped by the server and the first failure is thrown.
    public func pipeline(_ statements: [SQL]) throws(DatabaseError) -> [QueryResult] {
        try pipeline(statements, streaming: [], row: { _, _ in })
    }

    /// `pipeline`, except that the rows of the statements in `streamed` are not collected:
    /// each goes to `row` (with its statement's index) as soon as libpq has read it
    /// (single-row mode), read in place from libpq's buffer, and their `QueryResult` has
    /// no rows. For large answers: no copy of every row as Swift strings, and the caller
    /// can pass the first rows on while the server is still sending the rest. A failure
    /// after some rows (the connection lost, the statement cancelled) is still thrown,
    /// once the pipeline is drained: the caller must treat what it passed on as incomplete.
    public func pipeline(_ statements: [SQL], streaming streamed: Set<Int>,
                         row: (_ statement: Int, RawRow) -> Void) throws(DatabaseError) -> [QueryResult] {
        guard let conn, PQstatus(conn) == CONNECTION_OK else {
            throw DatabaseError(kind: .unavailable, detail: "connection lost")
        }
        // Statements to prepare in this pipeline: index -> name, kept once the Parse succeeded.
        var preparing: [Int: String] = [:]
        for (index, statement) in statements.enumerated() {
            switch send(statement, on: conn) {
            case .failed: throw lost(conn)
            case .sent: break
            case .preparing(let name): preparing[index] = name
            }
        }
        guard PQpipelineSync(conn) == 1 else { throw lost(conn) }

        var results: [QueryResult] = []
        var failure: DatabaseError?
        for index in statements.indices {
            if let name = preparing[index] {
                // The Parse's own answer comes first: one result, then a NULL.
                var parsed = false
                while let result = PQgetResult(conn) {
                    defer { PQclear(result) }
                    switch PQresultStatus(result) {
                    case PGRES_COMMAND_OK: parsed = true
                    case PGRES_PIPELINE_ABORTED: break
                    default: if failure == nil { failure = Self.error(from: result, index: index) }
                    }
                }
                if !parsed, prepared[statements[index].text] == name { prepared[statements[index].text] = nil }
            }
            let streaming = streamed.contains(index)
            // Must come before the statement's first result; refused (0) if libpq cannot, and
            // then its rows arrive in one result and are handed over from that.
            if streaming { _ = PQsetSingleRowMode(conn) }
            // Each statement's answer is one or more results followed by a NULL.
            while let result = PQgetResult(conn) {
                defer { PQclear(result) }
                switch PQresultStatus(result) {
                case PGRES_SINGLE_TUPLE:
                    if failure == nil { row(index, RawRow(result: result, row: 0)) }
                case PGRES_TUPLES_OK where streaming:
                    if failure == nil {
                        for r in 0..<PQntuples(result) { row(index, RawRow(result: result, row: r)) }
                    }
                    results.append(QueryResult(columnsOf: result))
                case PGRES_TUPLES_OK, PGRES_COMMAND_OK, PGRES_EMPTY_QUERY:
                    results.append(QueryResult(result))
                case PGRES_PIPELINE_ABORTED:
                    break
                default:
                    if failure == nil { failure = Self.error(from: result, index: index) }
                }
            }
            if !isHealthy { throw lost(conn) }
        }
        // Drain to the sync point so the connection is ready for the next pipeline.
        while true {
            guard let result = PQgetResult(conn) else {
                if !isHealthy { throw lost(conn) }
                continue
            }
            let status = PQresultStatus(result)
            // The Sync's own failure: a pipeline without BEGIN is one implicit transaction,
            // committed at its Sync, and a commit can fail (a deferred constraint, a
            // serialization failure). Numbered one past the last statement.
            if status == PGRES_FATAL_ERROR, failure == nil { failure = Self.error(from: result, index: statements.count) }
            PQclear(result)
            if status == PGRES_PIPELINE_SYNC { break }
        }
        if let failure { throw failure }
        return results
    }

    /// A round trip with no statement, sent now and not waited for: a Sync alone, which the
    /// server answers with ReadyForQuery; the answer is read by `syncsAnswered`, possibly on
    /// another thread (callers serialize every use of the connection themselves). A
    /// listening connection's backend sends every notification it was signalled before the
    /// Sync ahead of that answer (PostgreSQL's main loop processes pending notifications just
    /// before reporting ready), so this orders notifications as a statement would, without
    /// starting a transaction or running anything. False when it could not be sent.
    public func sendSync() -> Bool {
        guard let conn, PQstatus(conn) == CONNECTION_OK else { return false }
        return PQpipelineSync(conn) == 1 && PQflush(conn) == 0
    }

    /// Reads what has arrived and answers how many Syncs sent by `sendSync` it answered.
    /// The notifications read on the way (a backend sends those committed before a Sync
    /// ahead of its answer) are left for `notifications(readingInput: false)`.
    public func syncsAnswered() throws(DatabaseError) -> Int {
        guard let conn, PQconsumeInput(conn) == 1 else { throw DatabaseError(kind: .unavailable, detail: "connection lost") }
        var answered = 0
        // Never blocks: only results whose whole message has arrived are taken.
        while PQisBusy(conn) == 0, let result = PQgetResult(conn) {
            if PQresultStatus(result) == PGRES_PIPELINE_SYNC { answered += 1 }
            PQclear(result)
        }
        return answered
    }

    /// One statement on its own (migrations, health checks).
    @discardableResult
    public func execute(_ statement: SQL) throws(DatabaseError) -> QueryResult {
        try pipeline([statement])[0]
    }

    /// Runs statements that have no parameters as one simple-protocol script (migration files).
    /// Leaves pipeline mode for the duration: multi-statement strings are not allowed in it.
    public func executeScript(_ script: String) throws(DatabaseError) {
        guard let conn else { throw DatabaseError(kind: .unavailable, detail: "no connection") }
        PQexitPipelineMode(conn)
        defer { PQenterPipelineMode(conn) }
        guard let result = PQexec(conn, script) else { throw lost(conn) }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        if status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK && status != PGRES_EMPTY_QUERY {
            throw Self.error(from: result, index: 0)
        }
    }

    /// The socket, for LISTEN: readable when a notification may have arrived.
    public var socket: Int32 { conn.map { PQsocket($0) } ?? -1 }

    /// Reads pending input and returns the notifications received (channel, payload).
    /// `readingInput: false`: only those libpq has read already (e.g. while it waited for a
    /// statement's answer), without a `recv` that would find the socket empty.
    public func notifications(readingInput: Bool = true) throws(DatabaseError) -> [(channel: String, payload: String)] {
        guard let conn, !readingInput || PQconsumeInput(conn) == 1 else {
            throw DatabaseError(kind: .unavailable, detail: "connection lost")
        }
        var out: [(String, String)] = []
        while let notify = PQnotifies(conn) {
            out.append((String(cString: notify.pointee.relname), String(cString: notify.pointee.extra)))
            PQfreemem(notify)
        }
        return out
    }

    /// Named statements this connection has prepared, by text (`SQL.reused()`).
    private var prepared: [String: String] = [:]
    private var preparedSerial = 0
    /// At most this many per connection; later ones go unnamed, as every other statement.
    static let preparedLimit = 64

    private enum Sent { case failed, sent, preparing(String) }

    private func send(_ statement: SQL, on conn: OpaquePointer) -> Sent {
        let binds = statement.binds
        var name = statement.isReused ? prepared[statement.text] : nil
        var preparing: String?
        if statement.isReused, name == nil, prepared.count < Self.preparedLimit {
            preparedSerial += 1
            let fresh = "tideway_\(preparedSerial)"
            guard PQsendPrepare(conn, fresh, statement.text, Int32(binds.count), nil) == 1 else { return .failed }
            // Known from now on, so that the same text later in this pipeline uses it; forgotten
            // again if the Parse does not succeed.
            prepared[statement.text] = fresh
            name = fresh
            preparing = fresh
        }
        // strdup'd copies keep the C strings alive for the call.
        let cValues: [UnsafeMutablePointer<CChar>?] = binds.map { $0.flatMap { strdup($0) } }
        defer { cValues.forEach { free($0) } }
        let ok = cValues.withUnsafeBufferPointer { values in
            values.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: max(binds.count, 1)) { pointer in
                if let name {
                    PQsendQueryPrepared(conn, name, Int32(binds.count), binds.isEmpty ? nil : pointer, nil, nil, 0) == 1
                } else {
                    PQsendQueryParams(conn, statement.text, Int32(binds.count), nil, binds.isEmpty ? nil : pointer, nil, nil, 0) == 1
                }
            }
        }
        guard ok else { return .failed }
        return preparing.map { .preparing($0) } ?? .sent
    }

    private func lost(_ conn: OpaquePointer) -> DatabaseError {
        DatabaseError(kind: .unavailable, detail: String(cString: PQerrorMessage(conn)))
    }

    static func error(from result: OpaquePointer, index: Int) -> DatabaseError {
        func field(_ code: Int32) -> String? {
            PQresultErrorField(result, code).map { String(cString: $0) }
        }
        let state = field(Int32(UInt8(ascii: "C")))
        let message = field(Int32(UInt8(ascii: "M"))) ?? String(cString: PQresultErrorMessage(result))
        let hint = field(Int32(UInt8(ascii: "H")))
        // Class 08 is connection trouble; 57P0x the server shutting down.
        let unavailable = state.map { $0.hasPrefix("08") || $0.hasPrefix("57P") } ?? false
        return DatabaseError(
            kind: unavailable ? .unavailable : .query, sqlState: state, detail: message, statementIndex: index,
            constraint: hint)
    }
}
