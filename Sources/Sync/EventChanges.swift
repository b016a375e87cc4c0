import CoreMetrics
import Database

/// What a change event of one partition carries (sync-protocol.md, "Change events"): the
/// changes a pull from the cursor after number `since` would return, read by the pull's
/// own query (PullQuery) and cut into a page by the pull's own rules (PullPage), so that
/// applying them is the same as that pull.
public enum EventChanges {
    public struct Carried: Sendable {
        /// The cursor a client must hold for the changes to apply: after number `since`.
        public let after: String
        /// The cursor after them, the one the same pull would answer.
        public let cursor: String
        /// The changes as JSON text, in the pull's order.
        public let changes: [String]
    }

    /// Set once on the reader's connection (`Connection.pipeline`), so that each read is
    /// only its two statements (`read`): without BEGIN, the statements a pipeline sends
    /// before its Sync are one implicit transaction (PostgreSQL commits it at the Sync), and
    /// these make it a repeatable read, read-only one, the snapshot `read` needs, in which
    /// every prepared statement runs its generic plan. PostgreSQL kept planning the read of
    /// an agency partition's changes (a union of seven tables, every index of each opened by
    /// the planner) anew at every event (`PullQuery.genericPlans`; docs/performance/round-04.md, "The
    /// event publisher's read, fourth round"). BEGIN, that SET LOCAL and COMMIT were three
    /// more statements per event (docs/performance/round-06.md, "The event publisher's CPU per
    /// event"). `app.start_event_read` refuses to run in any other kind of transaction.
    public static let session: [SQL] = [
        "set default_transaction_isolation = 'repeatable read'",
        "set default_transaction_read_only = on",
        "set plan_cache_mode = force_generic_plan",
    ]

    /// The first statement of a read (app.start_event_read): the claims of a reader of the
    /// partition (app.claim_reader_of, repeatable/0082 says why any reader sees what every
    /// subscriber sees), whether it may read it, its clock and compaction horizon (the
    /// pull's status), and the stream revocations past id `handled` (`revoked_through`,
    /// `revoked_channels`), all in the read's snapshot.
    static func start(of partition: String, revocationsAfter handled: Int64) -> SQL {
        .reused("""
        select readable, seq, compacted_seq, revoked_through, revoked_channels
          from app.start_event_read(\(partition), \(handled))
        """)
    }

    /// Reads `partition` on `connection` (set up with `session`, in no transaction): the
    /// opening statement and the pull's changes after number `since`, in one round trip
    /// and one snapshot. `clock`: its number now. `carried`: nil when the event must stay
    /// thin: no `since` (nothing published yet), the reader may not read it, a compaction
    /// passed `since`, or more than `maxChanges` changes or `maxBytes` bytes of them.
    /// `start`: the opening statement's row (the revocations past id `handled`).
    ///
    /// `collections`: those the notifications named (ChangeNotice), nil when one named none.
    /// When they are one collection of a kind that has several, only its branch of the union
    /// is read (`narrowed`). What was read is then all the partition's changes after `since`
    /// only if its rows hold every number from `since` to the clock: each number is taken
    /// for the changes of one statement, of one table (app.tick, app.ticks), so no other
    /// collection can have a change there. A number missing from them may be another
    /// collection's change whose notification is still on its way (committed after this
    /// batch of notifications was read, before this snapshot), or a document changed again
    /// since: the whole partition is then read again, as without a collection.
    public static func read(_ connection: Connection, partition: Partition, collections: Set<String>? = nil, since: Int64?,
                            revocationsAfter handled: Int64, maxChanges: Int, maxBytes: Int,
                            key: [UInt8]) throws -> (clock: Int64, carried: Carried?, start: Row?) {
        let name = partition.description
        let from = Cursor.after(since ?? 0)
        let narrowed = collections.flatMap { only($0, of: partition.kind) }
        let changes = narrowed.map { PullQuery.changes(of: partition, in: $0, after: from, limit: maxChanges + 1) }
            ?? PullQuery.changes(of: partition, after: from, limit: maxChanges + 1)
        // No `since` (the partition's first event since the publisher started): the event is
        // thin whatever the changes are, so they are not read. Read, they were the partition's
        // first 51 changes from number 0, its oldest documents rendered for nothing: ~5 ms of
        // the reading backend's CPU at each partition's first event after a start
        // (docs/performance/round-11.md, "A restart's first push and event").
        let results = try connection.pipeline(since == nil ? [start(of: name, revocationsAfter: handled)]
                                                            : [start(of: name, revocationsAfter: handled), changes])
        let rows = since == nil ? [] : results[1].rows
        let status = results[0].rows.first
        let clock = status?.int64("seq") ?? 0
        let compacted = status?.int64("compacted_seq") ?? 0
        // A cursor a client holds after pulling to number `since` (PullPage's `next`).
        let after = Cursor.after(since ?? 0, horizon: compacted)
        guard let since, status?.bool("readable") == true, compacted <= since,
              let page = PullPage(status: status, rows: rows, after: after, limit: maxChanges), !page.more,
              page.changes.reduce(0, { $0 + $1.utf8.count + 1 }) <= maxBytes
        else {
            // Thin whatever the other collections hold: too many or too big already, or not
            // for these cursors.
            (narrowed == nil ? readAll : readOne).increment()
            return (clock, nil, status)
        }
        if narrowed != nil {
            guard Int64(Set(rows.compactMap { $0.int64("seq") }).count) == clock - since else {
                widened.increment()
                return try read(connection, partition: partition, collections: nil, since: since, revocationsAfter: handled,
                                maxChanges: maxChanges, maxBytes: maxBytes, key: key)
            }
            readOne.increment()
        } else {
            readAll.increment()
        }
        return (clock, Carried(after: after.encode(partition: name, key: key), cursor: page.next.encode(partition: name, key: key),
                               changes: page.changes), status)
    }

    /// `partition`'s clock alone (0 before its first change) and the stream revocations past
    /// id `handled` (`revoked_through`, `revoked_channels`, as `start` reads them), in one
    /// statement and snapshot: for an event that stays thin whatever changed, where `read` is
    /// also the reader's claims and the changes.
    public static func clock(_ connection: Connection, partition: String, revocationsAfter handled: Int64) throws -> (clock: Int64, start: Row?) {
        readClock.increment()
        let row = try connection.execute(.reused("""
            select seq, revoked_through, revoked_channels from app.event_clock(\(partition), \(handled))
            """)).first
        return (row?.int64("seq") ?? 0, row)
    }

    /// The one collection of `collections`, when it is one of several of `kind`'s (a kind
    /// of one collection reads that one anyway).
    static func only(_ collections: Set<String>, of kind: Partition.Kind) -> SyncCollection? {
        guard collections.count == 1, kind.collections.count > 1, let name = collections.first,
              let collection = SyncCollection(rawValue: name), collection.partitionKind == kind else { return nil }
        return collection
    }

    /// Reads of one collection's branch, of the whole partition, and of one collection's
    /// that had to be read again whole (`read`), and of the clock alone (`clock`).
    static let readOne = Counter(label: "tideway_event_reads_total", dimensions: [("read", "collection")])
    static let readAll = Counter(label: "tideway_event_reads_total", dimensions: [("read", "partition")])
    static let widened = Counter(label: "tideway_event_reads_total", dimensions: [("read", "widened")])
    static let readClock = Counter(label: "tideway_event_reads_total", dimensions: [("read", "clock")])
}
