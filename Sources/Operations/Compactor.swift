import Database
import Sync

/// `tideway compact --older-than 90d`: removes tombstones (deleted documents) older than a
/// cutoff from every sync table and raises each partition's compaction horizon
/// (`app.partition_clocks.compacted_seq`) to the highest change number removed, so that a
/// cursor from before the horizon gets `reset` instead of silently missing those deletes.
/// Runs as the administrator (like migrate); one transaction, so a pull sees the removal
/// and the horizon together or neither.
public struct Compactor {
    public let connection: Connection

    public init(connection: Connection) {
        self.connection = connection
    }

    public struct Summary: CustomStringConvertible, Sendable {
        public var tombstones = 0
        public var partitions = 0
        public var description: String { "compacted \(tombstones) tombstones in \(partitions) partitions" }
    }

    /// `olderThanSeconds`: tombstones whose last change is at least this old go.
    public func compact(olderThanSeconds: Int64) throws -> Summary {
        let tables = SyncCollection.allCases.map(\.table)
        return try connection.transaction { tx in
            // Data-modifying statements must be at the top level of a WITH, hence one CTE per table.
            let ctes = tables.enumerated().map { index, table -> SQL in
                """
                d\(unsafeSQL: String(index)) as (delete from sync.\(unsafeSQL: table)
                    where deleted and updated_at <= now() - make_interval(secs => \(olderThanSeconds))
                    returning partition, seq)
                """
            }
            let union = SQL.join(tables.indices.map { "select partition, seq from d\(unsafeSQL: String($0))" }, separator: " union all ")
            let row = try tx.query("""
                with \(SQL.join(ctes, separator: ", ")),
                removed as (\(union)),
                horizons as (
                    update app.partition_clocks c set compacted_seq = greatest(c.compacted_seq, r.top)
                      from (select partition, max(seq) as top from removed group by partition) r
                     where c.partition = r.partition
                    returning c.partition),
                -- Workers answer idle polls from what notifications told them: tell them this too.
                told as (select pg_notify('tideway_changes', partition) from horizons)
                select (select count(*) from removed) as tombstones, (select count(*) from horizons) as partitions,
                       (select count(*) from told) as told
                """).first
            return Summary(tombstones: Int(row?.int64("tombstones") ?? 0), partitions: Int(row?.int64("partitions") ?? 0))
        }
    }

    /// `90d`, `12h`, `30m`, `0s` → seconds; nil for anything else.
    public static func seconds(_ text: String) -> Int64? {
        guard let unit = text.last, let number = Int64(text.dropLast()), number >= 0 else { return nil }
        let scale: Int64
        switch unit {
        case "d": scale = 86_400
        case "h": scale = 3_600
        case "m": scale = 60
        case "s": scale = 1
        default: return nil
        }
        let (product, overflow) = number.multipliedReportingOverflow(by: scale)
        return overflow ? nil : product
    }
}
