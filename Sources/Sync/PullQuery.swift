import Database

/// The SQL of a pull: partition statuses, then one range scan per partition over the
/// tables of its collections, each change already rendered as JSON text by PostgreSQL.
enum PullQuery {
    /// A pull's statements, in the order of its one round trip: the generic plans (0), the
    /// statuses (1), then the page of each readable partition (statement n + 2), one change
    /// more than `limit` (that row only tells there are more). PullRoute's, and the
    /// warm-up's (Sync/WarmUp.swift), which prepares the same statements on a connection.
    static func statements(_ readable: [PullAnswer.Entry], limit: Int) -> [SQL] {
        [genericPlans, statuses(readable.map(\.name))]
            + readable.map { changes(of: $0.partition, after: $0.cursor, limit: limit + 1) }
    }

    /// Per partition: may the caller read it, its clock and compaction horizon. Prepared
    /// once per connection (function calls: no plan depends on the names).
    static func statuses(_ names: [String]) -> SQL {
        .reused("""
        select p.name as partition, app.can_read(p.name) as readable, c.seq, c.compacted_seq
          from unnest(\(names)::text[]) as p(name)
          left join app.clocks(\(names)::text[]) c on c.partition = p.name
        """)
    }

    /// The pull's statements run their generic plans, in this transaction only (SET LOCAL:
    /// the connection's other statements keep PostgreSQL's choice). PostgreSQL kept a custom
    /// plan for `changes` at every call from a cursor near the partition's end (its estimate
    /// of the generic plan's rows, a third of the partition, made that plan look costlier)
    /// and planned the union of the kind's tables anew each time, ~0.2–0.45 ms; the generic
    /// plan is the same range scan per table, no slower for 100 changes nor for 5,000
    /// (docs/performance/round-04.md, "Generic plans for the pull").
    static let genericPlans: SQL = "set local plan_cache_mode = force_generic_plan"

    /// Up to `limit` changes after `cursor`, in (seq, collection, id) order.
    ///
    /// Each change is rendered above the ORDER BY ... LIMIT, so that PostgreSQL sorts the
    /// keys and the document as stored (a large one a TOAST pointer of a few bytes), then
    /// renders each change as it sends it (PostgreSQL postpones an expensive output column
    /// past the sort when there is a LIMIT: `make_sort_input_target`). Rendering in each
    /// branch instead made PostgreSQL sort the rendered text (11.7 MB for one agency's 5,000
    /// reports, spilled to disk) and send nothing before all was rendered and sorted; now the
    /// first row leaves once the keys are sorted, and the rendering, the worker and nginx
    /// work at once (docs/performance/round-03.md, "Pulls that PostgreSQL streams").
    ///
    /// Prepared once per connection: planning the union of a kind's
    /// collections was a quarter of PostgreSQL's CPU for a pull of 100 changes (pgbench
    /// `-M prepared`, docs/performance/round-04.md); its generic plan (`genericPlans`) is the same
    /// range scan per collection, and a full pull did not get slower with it.
    ///
    /// One text per kind, made once, whose branches share the five parameters (partition,
    /// cursor's number, collection and id, limit): built at every call with a parameter per
    /// use (43 for an agency), it was a tenth of the event publisher's CPU per event, and
    /// every bound value was sent and parsed again per branch (docs/performance/round-06.md, "The
    /// event publisher's CPU per event").
    static func changes(of partition: Partition, after cursor: Cursor, limit: Int) -> SQL {
        SQL(unsafeSQL: changesText[partition.kind]!,
            binds: [partition.description, String(cursor.seq), cursor.collection, cursor.id, String(limit)]).reused()
    }

    /// The same, of one collection of the partition's kind only: one branch. The event
    /// publisher reads a change of one collection this way (EventChanges says when that is
    /// all the partition's changes).
    static func changes(of partition: Partition, in collection: SyncCollection, after cursor: Cursor, limit: Int) -> SQL {
        SQL(unsafeSQL: collectionChangesText[collection]!,
            binds: [partition.description, String(cursor.seq), cursor.collection, cursor.id, String(limit)]).reused()
    }

    private static let changesText: [Partition.Kind: String] = Dictionary(uniqueKeysWithValues: Partition.Kind.allCases.map {
        ($0, text(of: $0.collections))
    })

    private static let collectionChangesText: [SyncCollection: String] = Dictionary(uniqueKeysWithValues: SyncCollection.allCases.map {
        ($0, text(of: [$0]))
    })

    private static func text(of collections: [SyncCollection]) -> String {
        """
        select seq, coll, id,
               '{"collection":"' || coll || '","id":' || to_json(id)::text ||
               case when deleted then ',"op":"delete"}' else ',"op":"upsert","doc":' || doc::text || '}' end as body
          from (\(after(in: collections))) changes
         order by seq, coll collate "C", id collate "C"
         limit $5
        """
    }

    /// One branch per collection: `seq, coll, id, deleted, doc` of a partition's changes
    /// after a cursor ($1 the partition; $2, $3, $4 the cursor's number, collection and id).
    private static func after(in collections: [SyncCollection]) -> String {
        collections.map { collection in
            let coll = "'\(collection.rawValue)'"
            return """
                select seq, \(coll) as coll, id, deleted, doc
                  from sync.\(collection.table)
                 where partition = $1 and seq >= $2::bigint
                   and (seq > $2::bigint or $3::text < \(coll) collate "C" or ($3::text = \(coll) and id > $4::text collate "C"))
                """
        }.joined(separator: " union all ")
    }
}

/// One readable partition's page of changes, by the pull's rules: the carried events'
/// (EventChanges) from whole rows, and the pull's (PullAnswer, which streams) through the
/// same two rules below, so that an event's cursors are exactly the ones a pull would give.
struct PullPage {
    /// Where the next pull starts.
    let next: Cursor
    /// More changes than `limit`: the next pull continues amid them.
    let more: Bool
    /// The changes as JSON text, in the pull's order.
    let changes: [String]

    /// nil when the cursor must reset (`mustReset`). `rows`: of `PullQuery.changes` with a
    /// limit of `limit + 1`, the row past the limit telling that there are more.
    init?(status: Row?, rows: [Row], after cursor: Cursor, limit: Int) {
        let compacted = status?.int64("compacted_seq") ?? 0
        if Self.mustReset(cursor, compacted: compacted) { return nil }
        more = rows.count > limit
        let page = rows.prefix(limit)
        next = Self.next(after: cursor, more: more,
                         last: page.last.map { ($0.int64("seq") ?? 0, $0["coll"] ?? "", $0["id"] ?? "") },
                         clock: status?.int64("seq") ?? 0, compacted: compacted)
        changes = page.compactMap { $0["body"] }
    }

    /// Reset only when a compaction since this cursor was given removed tombstones the
    /// client has not pulled yet. A null cursor, or one given after the last compaction (a
    /// fresh client paging from null), has missed nothing: it pulls what survives. A cursor
    /// strictly inside number `compacted` (seeded batches share one number) may have missed
    /// a removed tombstone of that same number, so it resets too.
    static func mustReset(_ cursor: Cursor, compacted: Int64) -> Bool {
        cursor != .start && cursor.horizon < compacted
            && (cursor.seq < compacted || (cursor.seq == compacted && cursor.collection != "~"))
    }

    /// Where the next pull starts: after the page's last change when there are more, else
    /// after the partition's clock (everything up to it is delivered).
    static func next(after cursor: Cursor, more: Bool, last: (seq: Int64, collection: String, id: String)?,
                     clock: Int64, compacted: Int64) -> Cursor {
        if more, let last { return Cursor(seq: last.seq, collection: last.collection, id: last.id, horizon: compacted) }
        return .after(max(clock, cursor.seq), horizon: compacted)
    }
}
