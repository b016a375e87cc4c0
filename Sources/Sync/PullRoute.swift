import CoreMetrics
import Database
import FastCGI
import Foundation
import TidewayJSON
import Web

/// `POST /api/v1/sync/pull`: every requested partition answered from one snapshot.
///
/// The database work of a pull, all of it here and in `SyncService`:
/// 1. presence (`Presence.touch`): its own small write transaction, at most every 15 s per
///    login and worker — the pull itself is a read-only snapshot, which cannot write;
/// 2. the idle check (`unchanged`): one statement with no BEGIN/COMMIT, only when every
///    cursor stands at its partition's end (most polls: the measured fast path), and none
///    of those partitions is known in this worker to have moved past its cursor
///    (`ChangeHub.moved`: a pull after a change event, a device catching up); and not even
///    that when this worker knows the token valid and every partition readable and quiet
///    at the cursor (`AuthCache`, `ChangeHub.quiet`): then the answer comes from memory;
/// 3. the snapshot (`run`): one REPEATABLE READ read-only transaction for every partition,
///    sent with its COMMIT in one round trip; its opening authenticates the token. With a
///    replica (TIDEWAY_REPLICA_DATABASE) it runs there once the replica has replayed the
///    primary's position read in step 2 (or by one more statement when step 2 did not
///    run), else on the primary (`ReplicaReads`);
/// 4. the device record (`DevicePulls.record`): its own write, only for pulls that name
///    their device, and only when the positions moved or a minute has passed.
/// A long poll repeats 1–3 after each wake-up. Each step authenticates on its own because
/// each is its own transaction; the idle check and the snapshot are never both writes.
enum PullRoute {
    static func pull(_ context: RequestContext, _ service: SyncService) throws -> HTTPResponse {
        let hub = service.changes
        // The idle check's barrier, begun as the poll arrives: its round trip runs while the
        // body is parsed and checked (`unchanged`, ListenerBarrier.take).
        let arrival = hub.takeBarrier()
        defer { hub.release(arrival) }
        var early = arrival
        let body = try context.jsonObject(allowing: ["partitions", "limit", "wait", "clientId"])
        let request = try PullRequest(body, key: context.app.secrets.cursorKey, maxLimit: context.app.config.limits.changesPerPull)
        context.loggedClientID = request.clientID
        // Here, not only in the snapshot: no token is a 401 before any head is made (an unknown
        // or revoked one is refused by the snapshot's opening, whose 401 then replaces the
        // streamed answer before its first byte: BodyWriter, App.handle).
        guard let token = context.bearerToken else { throw AppError.unauthenticated }
        // Once per request: presence and the idle check's memory key on it.
        let digest = Tokens.digest(token)
        let deadline = Date().addingTimeInterval(request.wait)
        while true {
            // Read before the snapshot: a commit after it wakes the wait below.
            let seen = hub.generation
            // Before the snapshot, so that the caller's own document already says On-Line.
            service.presence.touch(context, digest: digest) {
                // A write of its own (milliseconds): the barrier begun at the arrival is given
                // back first, so that the listener reads the connection meanwhile.
                hub.release(early)
                early = nil
            }
            let idle = try unchanged(request, context: context, hub: hub, seen: seen, digest: digest, barrier: early)
            early = nil
            let answer: Answer
            if let unchanged = idle.answer {
                answer = unchanged
            } else {
                let primaryLSN = try idle.lsn ?? context.primaryPosition()
                if request.wait == 0 || Date() >= deadline {
                    // The last snapshot of this request, whatever it holds: streamed.
                    return streamed(request, context, service, primaryLSN: primaryLSN, seen: seen)
                }
                let out = PullOutput(writer: nil)
                var snapshot = try run(request, context: context, primaryLSN: primaryLSN, into: out)
                hub.saw(snapshot.clocks, since: seen)
                snapshot.body = out.bytes
                answer = snapshot
            }
            if answer.changed || request.wait == 0 || Date() >= deadline {
                return respond(answer, request, context, service)
            }
            let names = Set(request.partitions.map(\.name))
            guard hub.wait(for: names, after: seen, until: deadline) else {
                // No waiting room (every slot taken by other long polls): answer now.
                return respond(answer, request, context, service)
            }
        }
    }

    static func respond(_ answer: Answer, _ request: PullRequest, _ context: RequestContext, _ service: SyncService) -> HTTPResponse {
        if let clientID = request.clientID {
            service.devicePulls.record(context, clientID: clientID, positions: answer.positions)
        }
        if !answer.changed {
            // Nothing new anywhere: counted here, and no request log line (`App.handle`).
            context.idlePoll = true
            (answer.fromMemory ? idleFromMemory : idleFromDatabase).increment()
        }
        return .jsonBytes(answer.body)
    }

    /// Pulls that found nothing new, by where the answer came from (made once: a handler
    /// made per request costs its key's formatting and a lookup).
    static let idleFromMemory = Counter(label: "tideway_idle_polls_total", dimensions: [("answered_by", "memory")])
    static let idleFromDatabase = Counter(label: "tideway_idle_polls_total", dimensions: [("answered_by", "database")])

    /// The snapshot's answer written out as PostgreSQL sends its rows (`PullOutput`), so that
    /// PostgreSQL, the worker and nginx's gzip work at once on a large pull. An error before
    /// the first byte is still the contract's error (`BodyWriter`); one after it closes the
    /// connection, so the client never takes the part it got for a whole answer (its cursor
    /// advances only with a complete body: it pulls again from where it stood).
    static func streamed(_ request: PullRequest, _ context: RequestContext, _ service: SyncService,
                         primaryLSN: String?, seen: UInt64) -> HTTPResponse {
        HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")],
                     body: .stream { writer in
                         let out = PullOutput(writer: writer)
                         let answer = try run(request, context: context, primaryLSN: primaryLSN, into: out)
                         out.finish()
                         service.changes.saw(answer.clocks, since: seen)
                         if let clientID = request.clientID {
                             service.devicePulls.record(context, clientID: clientID, positions: answer.positions)
                         }
                     })
    }

    /// When every cursor stands after its partition's last change, one statement can tell
    /// whether anything changed (app.unchanged); no answer when the full pull must run, or
    /// when this worker already knows a partition moved past its cursor (the check would
    /// only say so: a round trip for nothing). With a replica, the same statement reads the
    /// primary's WAL position, which the replica must have replayed before it may answer
    /// the full pull. `seen`: the hub's generation, read before the statement.
    ///
    /// No statement of its own when what that one would check is known here: the token valid
    /// and every partition readable (`AuthCache`, learned from this statement, emptied on
    /// every change of tokens or rights), and each clock and horizon exactly at the cursor
    /// with no commit notified since (`ChangeHub.quiet`) — known still once the listener has
    /// heard every notification committed before the poll (`ChangeHub.barrier`), so that a
    /// revocation or a write acknowledged before the poll is always seen. Such an answer
    /// never carries documents, and its cursors are the ones asked with.
    /// `hash`: the token's digest (`Tokens.digest`). `early`: a barrier taken when the poll
    /// arrived (`ChangeHub.takeBarrier`), else one is taken here; given back at once when
    /// not waited for, so that the listener reads again.
    static func unchanged(_ request: PullRequest, context: RequestContext, hub: ChangeHub,
                          seen: UInt64, digest hash: [UInt8],
                          barrier early: ListenerBarrier.Ticket? = nil) throws -> (answer: Answer?, lsn: String?) {
        defer { hub.release(early) }
        guard !request.partitions.isEmpty else { return (nil, nil) }
        var names: [String] = [], seqs: [String] = [], horizons: [String] = []
        var cursors: [Cursor] = []
        for entry in request.partitions {
            guard case .from(_, let cursor) = entry.start, cursor.collection == "~", cursor != .start,
                  !hub.moved(entry.name, past: cursor.seq) else { return (nil, nil) }
            names.append(entry.name)
            seqs.append(String(cursor.seq))
            horizons.append(String(cursor.horizon))
            cursors.append(cursor)
        }
        func known() -> Bool {
            hub.auth.allows(hash, names)
                && zip(names, cursors).allSatisfy { hub.quiet($0, seq: $1.seq, horizon: $1.horizon) }
        }
        // Known before and after every change committed before this poll has been heard.
        if known() && hub.barrier(early ?? hub.takeBarrier()) && known() {
            var answer = idle(request, context: context)
            answer.fromMemory = true
            return (answer, nil)
        }
        // Not waited for: given back before the statement, so that the listener reads the
        // connection meanwhile (a poll that drives it would hold it through the statement).
        hub.release(early)
        let authSeen = hub.auth.generation
        let asked = AuthCache.now()
        // One statement, its own transaction (no BEGIN/COMMIT around it: a third of the
        // database's work per idle poll); app.unchanged checks the token first, and only reads.
        // Prepared once per connection (parsing and planning it was about 15% of PostgreSQL's
        // share of an idle poll, docs/performance/method.md); its plan is a function call either way.
        let position: SQL = context.app.replica == nil ? "null" : "pg_current_wal_lsn()::text"
        let row = try context.app.database.withConnection { connection in
            try connection.execute(.reused("""
                select app.unchanged(\(SQLBytes(hash)), \(names)::text[], \(seqs)::bigint[], \(horizons)::bigint[]) as same,
                       app.access_token_ttl(\(SQLBytes(hash))) as ttl, \(position) as lsn
                """)).first
        }
        guard try row?.decode("same", as: Bool.self) == true else { return (nil, try row?.decodeIfPresent("lsn", as: String.self)) }
        for entry in request.partitions {
            guard case .from(_, let cursor) = entry.start else { return (nil, nil) }
            hub.saw(entry.name, clock: cursor.seq, horizon: cursor.horizon, since: seen)
        }
        if let ttl = row?["ttl"].flatMap(Double.init) {
            hub.auth.fill(hash, readable: names, seconds: ttl, asked: asked, since: authSeen)
        }
        return (idle(request, context: context), nil)
    }

    /// "Nothing new" for every partition asked, each with the cursor it was asked with.
    /// Written into one buffer (a text per part, then its bytes, was a thirtieth of the
    /// worker's CPU per idle poll).
    static func idle(_ request: PullRequest, context: RequestContext) -> Answer {
        let key = context.app.secrets.cursorKey
        var positions: [String: Int64] = [:]
        var writer = JSONWriter(capacity: 48 + 160 * request.partitions.count)
        writer.raw(#"{"partitions":{"#)
        for (index, entry) in request.partitions.enumerated() {
            guard case .from(_, let cursor) = entry.start else { continue }
            if index > 0 { writer.raw(",") }
            positions[entry.name] = cursor.seq
            writer.write(.string(entry.name))
            writer.raw(#":{"status":"ok","changes":[],"cursor":"#)
            writer.write(.string(request.cursorTexts[entry.name] ?? cursor.encode(partition: entry.name, key: key)))
            writer.raw(#","more":false}"#)
        }
        writer.raw("}}")
        return Answer(body: writer.output, changed: false, positions: positions)
    }

    struct Answer {
        /// The JSON; empty for a streamed answer (written out already).
        var body: [UInt8] = []
        /// True when some partition has changes, or a status other than `ok`.
        var changed: Bool
        /// Per partition answered `ok`: the seq up to which the caller now has every change.
        var positions: [String: Int64] = [:]
        /// Per readable partition: its clock in the snapshot (none from an idle check).
        var clocks: [String: Int64] = [:]
        /// Answered from the worker's memory, without PostgreSQL (`unchanged`).
        var fromMemory = false
    }

    /// `primaryLSN`: where the primary stood when the pull began; a replica answers only once
    /// it has replayed that far (nil: the primary answers).
    ///
    /// One round trip: the statuses, then per readable partition its page, one change more
    /// than the limit (that row only tells there are more), each statement's rows read in
    /// place from libpq as they arrive (a change's JSON, rendered by PostgreSQL, is copied once).
    static func run(_ request: PullRequest, context: RequestContext, primaryLSN: String?, into out: PullOutput) throws -> Answer {
        let readable = request.partitions.compactMap { entry -> PullAnswer.Entry? in
            if case .from(let partition, let cursor) = entry.start { return .init(name: entry.name, partition: partition, cursor: cursor) }
            return nil
        }
        let invalid = request.partitions.compactMap { entry -> String? in
            if case .invalidPartition = entry.start { return entry.name }
            return nil
        }
        let statements = PullQuery.statements(readable, limit: request.limit)
        return try context.asAPICallerReading(replicaAfter: primaryLSN, snapshot: true) { tx, _ in
            // A retry (a replica's recovery conflict) starts the answer again, unless it has gone out.
            try out.restart()
            var answer = PullAnswer(readable: readable, invalid: invalid, limit: request.limit, key: context.app.secrets.cursorKey,
                                    out: out)
            _ = try tx.queries(statements, thenCommit: true, streaming: Set(1..<statements.count)) { statement, row in
                if statement == 1 { answer.status(row) } else if statement > 1 { answer.change(statement - 2, row) }
            }
            return answer.finish()
        }
    }
}

/// Where a pull's answer goes: to the client in chunks as it is made (`writer`), or kept
/// whole (`bytes`, without a writer: a long poll's snapshot, which may turn out unchanged).
final class PullOutput {
    private let writer: (any BodyWriter)?
    private(set) var bytes: [UInt8] = []
    /// Written out whenever this much is waiting: FastCGI records, nginx's gzip and the
    /// client's TLS then work on one chunk while PostgreSQL sends the next.
    static let chunk = 64 * 1024

    init(writer: (any BodyWriter)?) {
        self.writer = writer
        bytes.reserveCapacity(writer == nil ? 4096 : Self.chunk + 8192)
    }

    /// Forgets what was made so far, if none of it has gone out.
    func restart() throws {
        guard writer?.isCommitted != true else { throw AppError(.unavailable, "the pull was interrupted; pull again") }
        bytes.removeAll(keepingCapacity: true)
    }

    func append(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    func append(_ text: [UInt8]) { bytes.append(contentsOf: text) }

    func append(_ byte: UInt8) { bytes.append(byte) }

    func append(_ raw: UnsafeRawBufferPointer) {
        bytes.append(contentsOf: raw)
        if let writer, bytes.count >= Self.chunk {
            writer.write(bytes)
            bytes.removeAll(keepingCapacity: true)
        }
    }

    /// Writes out the rest.
    func finish() {
        guard let writer else { return }
        writer.write(bytes)
        writer.flush()
        bytes = []
    }
}

/// A snapshot's answer, written as the rows of its statements arrive: `{"partitions":{...}}`
/// with the invalid partitions first, then each readable one in order. A partition's entry
/// holds its changes before its cursor and `more` (`{"status":"ok","changes":[...],"cursor":
/// ...,"more":...}`; JSON's key order means nothing to a reader), so that every page streams
/// as its rows come, and where it ends is told by its last rows: the limit-th change's key is
/// where the next page starts when a row past the limit follows. An entry is opened when its
/// first change arrives (or the answer ends), every entry before it then closed.
struct PullAnswer {
    struct Entry {
        let name: String
        let partition: Partition
        let cursor: Cursor
    }

    private let readable: [Entry]
    private let invalid: [String]
    private let limit: Int
    private let key: [UInt8]
    private let out: PullOutput
    private var statuses: [String: (readable: Bool, seq: Int64, compacted: Int64)] = [:]
    /// Per partition: the key of its limit-th change, and whether a change past it came.
    private var ends: [(last: (seq: Int64, collection: String, id: String)?, more: Bool)]
    /// Per partition: changes so far.
    private var counts: [Int]
    /// Per partition: whether its entry is open for changes (status `ok`, not closed yet).
    private var accepting: [Bool]
    /// Entries opened so far; the last one's changes may still be coming.
    private var opened = 0
    private var changed: Bool
    private var positions: [String: Int64] = [:]

    init(readable: [Entry], invalid: [String], limit: Int, key: [UInt8], out: PullOutput) {
        self.readable = readable
        self.invalid = invalid
        self.limit = limit
        self.key = key
        self.out = out
        ends = readable.map { _ in (nil, false) }
        counts = readable.map { _ in 0 }
        accepting = readable.map { _ in false }
        changed = !invalid.isEmpty
    }

    mutating func status(_ row: RawRow) {
        guard let name = row[0] else { return }
        statuses[name] = (row[1] == "t", row[2].flatMap { Int64($0) } ?? 0, row[3].flatMap { Int64($0) } ?? 0)
    }

    mutating func change(_ index: Int, _ row: RawRow) {
        open(through: index)
        guard accepting[index] else { return }
        // The row past the limit only tells that there are more.
        guard counts[index] < limit else {
            ends[index].more = true
            return
        }
        if counts[index] > 0 { out.append(UInt8(ascii: ",")) }
        counts[index] += 1
        if counts[index] == limit { ends[index].last = Self.key(of: row) }
        _ = row.withBytes(3) { out.append($0) }
    }

    /// Writes the entries not yet written and the end; the answer's summary.
    mutating func finish() -> PullRoute.Answer {
        open(through: readable.count)
        out.append("}}")
        return PullRoute.Answer(changed: changed, positions: positions,
                                clocks: statuses.compactMapValues { $0.readable ? $0.seq : nil })
    }

    private static func key(of row: RawRow) -> (seq: Int64, collection: String, id: String) {
        (row[0].flatMap { Int64($0) } ?? 0, row[1] ?? "", row[2] ?? "")
    }

    /// Opens the entries up to `index` (whose changes may follow), closing those before it;
    /// past the last partition, closes them all.
    private mutating func open(through index: Int) {
        if opened == 0 {
            out.append("{\"partitions\":{")
            for (n, name) in invalid.enumerated() {
                if n > 0 { out.append(",") }
                out.append(JSON.string(name).serializedBytes())
                out.append(":{\"status\":\"invalid\"}")
            }
        }
        while opened <= min(index, readable.count - 1) {
            close(opened - 1)
            if opened > 0 || !invalid.isEmpty { out.append(",") }
            entry(opened)
            opened += 1
        }
        if index >= readable.count { close(opened - 1) }
    }

    /// Ends an open entry: its cursor and `more`, now that its last row has come.
    private mutating func close(_ index: Int) {
        guard index >= 0, accepting[index] else { return }
        accepting[index] = false
        if counts[index] > 0 { changed = true }
        let (name, cursor) = (readable[index].name, readable[index].cursor)
        let status = statuses[name] ?? (readable: true, seq: 0, compacted: 0)
        let more = ends[index].more
        let next = PullPage.next(after: cursor, more: more, last: ends[index].last, clock: status.seq,
                                 compacted: status.compacted)
        // Inside a seq (a page ending amid a batch that shares it) only the one before is whole.
        positions[name] = more ? next.seq - 1 : next.seq
        out.append("],\"cursor\":")
        out.append(JSON.string(next.encode(partition: name, key: key)).serializedBytes())
        out.append(more ? ",\"more\":true}" : ",\"more\":false}")
    }

    /// Partition `index`'s entry: whole when its status is not `ok`, else up to its changes.
    private mutating func entry(_ index: Int) {
        let (name, cursor) = (readable[index].name, readable[index].cursor)
        out.append(JSON.string(name).serializedBytes())
        out.append(":")
        guard let status = statuses[name], status.readable else {
            out.append("{\"status\":\"forbidden\"}")
            changed = true
            return
        }
        if PullPage.mustReset(cursor, compacted: status.compacted) {
            out.append("{\"status\":\"reset\"}")
            changed = true
            return
        }
        out.append("{\"status\":\"ok\",\"changes\":[")
        accepting[index] = true
    }
}
