import Database

/// The SQL of a pull: partition statuses, then one range scan per partition over the
/// tables of its collections, each change already rendered as JSON text by PostgreSQL.
enum PullQuery {
    /// Per partition: may the caller read it, its clock and compaction horizon.
    static func statuses(_ names: [String]) -> SQL {
        """
        select p.name as partition, app.can_read(p.name) as readable, c.seq, c.compacted_seq
          from unnest(\(names)::text[]) as p(name)
          left join app.clocks(\(names)::text[]) c on c.partition = p.name
        """
    }

    /// Changes after `cursor`, in (seq, collection, id) order, `limit + 1` of them so that
    /// the caller can tell whether there are more.
    static func changes(of partition: Partition, after cursor: Cursor, limit: Int) -> SQL {
        let name = partition.description
        let branches = partition.kind.collections.map { collection -> SQL in
            let coll = collection.rawValue
            return """
                select seq, \(unsafeSQL: "'\(coll)'") as coll, id,
                       '{"collection":"\(unsafeSQL: coll)","id":' || to_json(id)::text ||
                       case when deleted then ',"op":"delete"}' else ',"op":"upsert","doc":' || doc::text || '}' end as body
                  from sync.\(unsafeSQL: collection.table)
                 where partition = \(name) and seq >= \(cursor.seq)
                   and (seq > \(cursor.seq) or \(cursor.collection) < \(unsafeSQL: "'\(coll)'") collate "C"
                        or (\(cursor.collection) = \(unsafeSQL: "'\(coll)'") and id > \(cursor.id) collate "C"))
                """
        }
        return """
            select seq, coll, id, body from (\(SQL.join(branches, separator: " union all "))) changes
             order by seq, coll collate "C", id collate "C"
             limit \(limit + 1)
            """
    }
}

/// One readable partition's answer in a pull, from its row of `PullQuery.statuses` and its
/// rows of `PullQuery.changes`: the pull's and the carried events' (EventChanges), so that
/// an event's cursors are exactly the ones a pull would give.
struct PullPage {
    /// Where the next pull starts.
    let next: Cursor
    /// More changes than `limit`: the next pull continues amid them.
    let more: Bool
    /// The changes as JSON text, in the pull's order.
    let changes: [String]

    /// nil when the cursor must reset: a compaction since this cursor was given removed
    /// tombstones the client has not pulled yet. A null cursor, or one given after the last
    /// compaction (a fresh client paging from null), has missed nothing: it pulls what
    /// survives. A cursor strictly inside number `compacted` (seeded batches share one
    /// number) may have missed a removed tombstone of that same number, so it resets too.
    init?(status: Row?, rows: [Row], after cursor: Cursor, limit: Int) {
        let clock = status?.int64("seq") ?? 0
        let compacted = status?.int64("compacted_seq") ?? 0
        if cursor != .start && cursor.horizon < compacted
            && (cursor.seq < compacted || (cursor.seq == compacted && cursor.collection != "~")) {
            return nil
        }
        more = rows.count > limit
        let page = rows.prefix(limit)
        if more, let last = page.last {
            next = Cursor(seq: last.int64("seq") ?? 0, collection: last["coll"] ?? "", id: last["id"] ?? "", horizon: compacted)
        } else {
            // Everything up to the clock is delivered: later pulls start after it.
            next = .after(max(clock, cursor.seq), horizon: compacted)
        }
        changes = page.compactMap { $0["body"] }
    }
}
