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
///    cursor stands at its partition's end (most polls: the measured fast path);
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
        let body = try context.jsonObject(allowing: ["partitions", "limit", "wait", "clientId"])
        let request = try PullRequest(body, key: context.app.secrets.cursorKey, maxLimit: context.app.config.limits.changesPerPull)
        context.loggedClientID = request.clientID
        let hub = service.changes
        let deadline = Date().addingTimeInterval(request.wait)
        while true {
            // Read before the snapshot: a commit after it wakes the wait below.
            let seen = hub.generation
            // Before the snapshot, so that the caller's own document already says On-Line.
            service.presence.touch(context)
            let idle = try unchanged(request, context: context)
            let answer = try idle.answer ?? run(request, context: context, primaryLSN: idle.lsn ?? context.primaryPosition())
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
        return .jsonText(answer.text)
    }

    /// When every cursor stands after its partition's last change, one statement can tell
    /// whether anything changed (app.unchanged); no answer when the full pull must run. With
    /// a replica, the same statement reads the primary's WAL position, which the replica
    /// must have replayed before it may answer the full pull.
    static func unchanged(_ request: PullRequest, context: RequestContext) throws -> (answer: Answer?, lsn: String?) {
        guard let token = context.bearerToken, !request.partitions.isEmpty else { return (nil, nil) }
        var names: [String] = [], seqs: [String] = [], horizons: [String] = []
        for entry in request.partitions {
            guard case .from(_, let cursor) = entry.start, cursor.collection == "~", cursor != .start else { return (nil, nil) }
            names.append(entry.name)
            seqs.append(String(cursor.seq))
            horizons.append(String(cursor.horizon))
        }
        // One statement, its own transaction (no BEGIN/COMMIT around it: a third of the
        // database's work per idle poll); app.unchanged checks the token first, and only reads.
        // Prepared once per connection (parsing and planning it was about 15% of PostgreSQL's
        // share of an idle poll, docs/performance.md); its plan is a function call either way.
        let position: SQL = context.app.replica == nil ? "null" : "pg_current_wal_lsn()::text"
        let row = try context.app.database.withConnection { connection in
            try connection.execute(.reused("""
                select app.unchanged(\(Tokens.hash(token)), \(names)::text[], \(seqs)::bigint[], \(horizons)::bigint[]) as same,
                       \(position) as lsn
                """)).first
        }
        guard try row?.decode("same", as: Bool.self) == true else { return (nil, try row?.decodeIfPresent("lsn", as: String.self)) }
        let key = context.app.secrets.cursorKey
        var positions: [String: Int64] = [:]
        var text = "{\"partitions\":{"
        for (index, entry) in request.partitions.enumerated() {
            guard case .from(_, let cursor) = entry.start else { return (nil, nil) }
            if index > 0 { text += "," }
            positions[entry.name] = cursor.seq
            text += JSON.string(entry.name).serialized() + #":{"status":"ok","cursor":"#
            text += JSON.string(cursor.encode(partition: entry.name, key: key)).serialized()
            text += #","more":false,"changes":[]}"#
        }
        return (Answer(text: text + "}}", changed: false, positions: positions), nil)
    }

    struct Answer {
        var text: String
        /// True when some partition has changes, or a status other than `ok`.
        var changed: Bool
        /// Per partition answered `ok`: the seq up to which the caller now has every change.
        var positions: [String: Int64] = [:]
    }

    /// `primaryLSN`: where the primary stood when the pull began; a replica answers only once
    /// it has replayed that far (nil: the primary answers).
    static func run(_ request: PullRequest, context: RequestContext, primaryLSN: String?) throws -> Answer {
        let key = context.app.secrets.cursorKey
        let readable = request.partitions.compactMap { entry -> (String, Partition, Cursor)? in
            if case .from(let partition, let cursor) = entry.start { return (entry.name, partition, cursor) }
            return nil
        }
        // The statuses, then one page per readable partition, in their order: one round trip.
        let (statusRows, pages) = try context.asAPICallerReading(replicaAfter: primaryLSN, snapshot: true) { tx, _ -> ([Row], ArraySlice<QueryResult>) in
            let statements = [PullQuery.statuses(readable.map(\.0))]
                + readable.map { PullQuery.changes(of: $0.1, after: $0.2, limit: request.limit) }
            let results = try tx.queries(statements, thenCommit: true)
            return (results[0].rows, results.dropFirst())
        }
        var statuses: [String: Row] = [:]
        for row in statusRows { if let name = row["partition"] { statuses[name] = row } }

        var text = "{\"partitions\":{"
        var changed = false
        var positions: [String: Int64] = [:]
        var first = true
        func open(_ name: String) {
            if !first { text += "," }
            first = false
            text += JSON.string(name).serialized() + ":"
        }
        for entry in request.partitions {
            guard case .from = entry.start else {
                open(entry.name)
                text += #"{"status":"invalid"}"#
                changed = true
                continue
            }
        }
        for (index, (name, _, cursor)) in readable.enumerated() {
            open(name)
            let status = statuses[name]
            guard status?.bool("readable") == true else {
                text += #"{"status":"forbidden"}"#
                changed = true
                continue
            }
            guard let page = PullPage(status: status, rows: pages[pages.startIndex + index].rows, after: cursor, limit: request.limit) else {
                text += #"{"status":"reset"}"#
                changed = true
                continue
            }
            if !page.changes.isEmpty { changed = true }
            // Inside a seq (a page ending amid a batch that shares it) only the one before is whole.
            positions[name] = page.more ? page.next.seq - 1 : page.next.seq
            text += #"{"status":"ok","cursor":"# + JSON.string(page.next.encode(partition: name, key: key)).serialized()
            text += #","more":"# + (page.more ? "true" : "false") + #","changes":["#
            text += page.changes.joined(separator: ",")
            text += "]}"
        }
        text += "}}"
        return Answer(text: text, changed: changed, positions: positions)
    }
}
