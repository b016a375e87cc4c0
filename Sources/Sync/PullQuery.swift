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
