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

    /// The opening statements of the reading transaction (app.start_event_read): the claims
    /// of a reader of the partition (app.claim_reader_of, repeatable/0082 says why any reader
    /// sees what every subscriber sees), whether it may read it, its clock and compaction
    /// horizon (the pull's status), and the stream revocations past id `handled`
    /// (`revoked_through`, `revoked_channels`), all in the read's snapshot.
    ///
    /// Opened with the pull's generic plans (`PullQuery.genericPlans`): PostgreSQL kept
    /// planning the read of an agency partition's changes (a union of seven tables, every
    /// index of each opened by the planner) anew at every event, which was most of the
    /// publisher's PostgreSQL CPU (docs/performance.md, "The event publisher's read, fourth
    /// round").
    public static func opening(of partition: String, revocationsAfter handled: Int64) -> [SQL] {
        [PullQuery.genericPlans, start(of: partition, revocationsAfter: handled)]
    }

    static func start(of partition: String, revocationsAfter handled: Int64) -> SQL {
        .reused("""
        select readable, seq, compacted_seq, revoked_through, revoked_channels
          from app.start_event_read(\(partition), \(handled))
        """)
    }

    /// Reads `partition` in `tx`, a snapshot opened with `opening(of:revocationsAfter:)`.
    /// `clock`: its number now. `carried`: nil when the event must stay thin: no `since`
    /// (nothing published yet), the reader may not read it, a compaction passed `since`, or
    /// more than `maxChanges` changes or `maxBytes` bytes of them. `start`: the opening
    /// statement's row (the revocations).
    public static func read(_ tx: Transaction, partition: Partition, since: Int64?, maxChanges: Int, maxBytes: Int,
                            key: [UInt8]) throws -> (clock: Int64, carried: Carried?, start: Row?) {
        let name = partition.description
        let from = Cursor.after(since ?? 0)
        let rows = try tx.query(PullQuery.changes(of: partition, after: from, limit: maxChanges + 1), thenCommit: true).rows
        let status = tx.openingResults.last?.rows.first
        let clock = status?.int64("seq") ?? 0
        let compacted = status?.int64("compacted_seq") ?? 0
        // A cursor a client holds after pulling to number `since` (PullPage's `next`).
        let after = Cursor.after(since ?? 0, horizon: compacted)
        guard let since, status?.bool("readable") == true, compacted <= since,
              let page = PullPage(status: status, rows: rows, after: after, limit: maxChanges), !page.more,
              page.changes.reduce(0, { $0 + $1.utf8.count + 1 }) <= maxBytes
        else { return (clock, nil, status) }
        return (clock, Carried(after: after.encode(partition: name, key: key), cursor: page.next.encode(partition: name, key: key),
                               changes: page.changes), status)
    }
}
