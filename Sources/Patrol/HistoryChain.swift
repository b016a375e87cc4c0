import Database
import Support

/// The report history's hash chain (domain.md, server effect 7). The trigger of migration
/// 0020 appends entries; this recomputes their hashes and checks the links, so that an
/// entry edited, removed or reordered after the fact is found.
public enum HistoryChain {
    /// One entry as stored, with `at` and `change` in the text forms the hash covers
    /// (UTC with microseconds; PostgreSQL's jsonb text, "null" for none).
    public struct Entry: Sendable, Equatable {
        public var id: Int64
        public var reportID: String
        public var partition: String
        public var seq: Int64
        public var version: Int64
        public var userID: String
        public var device: String
        public var at: String
        public var op: String
        public var change: String
        public var prevHash: String
        public var hash: String

        public init(id: Int64, reportID: String, partition: String, seq: Int64, version: Int64, userID: String,
                    device: String, at: String, op: String, change: String, prevHash: String, hash: String) {
            self.id = id
            self.reportID = reportID
            self.partition = partition
            self.seq = seq
            self.version = version
            self.userID = userID
            self.device = device
            self.at = at
            self.op = op
            self.change = change
            self.prevHash = prevHash
            self.hash = hash
        }
    }

    static let formatTag = "tideway-report-history-v1"

    /// Every field as `<byte length>:<bytes>\n`, so that no two entries serialize alike
    /// (app.history_canonical in SQL writes the same bytes).
    public static func canonicalBytes(of entry: Entry, prevHash: String) -> [UInt8] {
        let fields = [formatTag, prevHash, entry.reportID, entry.partition, String(entry.seq), String(entry.version),
                      entry.userID, entry.device, entry.at, entry.op, entry.change]
        var bytes: [UInt8] = []
        for field in fields {
            let utf8 = Array(field.utf8)
            bytes += Array(String(utf8.count).utf8) + [UInt8(ascii: ":")] + utf8 + [UInt8(ascii: "\n")]
        }
        return bytes
    }

    public static func hash(of entry: Entry, prevHash: String) -> String {
        Crypto.hex(Crypto.sha256(canonicalBytes(of: entry, prevHash: prevHash)))
    }

    /// What is wrong with a chain, naming the first entry that does not hold.
    public struct Break: Error, Sendable, Equatable, CustomStringConvertible {
        public let reportID: String
        public let entryID: Int64?
        public let reason: String
        public var description: String {
            "report \(reportID): " + (entryID.map { "entry \($0): " } ?? "") + reason
        }
    }

    /// Checks one report's entries, in id order. `currentVersion`: the report's version
    /// now, when it still exists, so that entries removed from the end are noticed too.
    public static func check(_ entries: [Entry], currentVersion: Int64?) -> Break? {
        var previous = ""
        var lastVersion: Int64 = 0
        for entry in entries {
            if entry.prevHash != previous {
                return Break(reportID: entry.reportID, entryID: entry.id,
                             reason: "does not link to the entry before it (an entry was removed or reordered)")
            }
            if hash(of: entry, prevHash: previous) != entry.hash {
                return Break(reportID: entry.reportID, entryID: entry.id, reason: "hash mismatch (the entry was altered)")
            }
            previous = entry.hash
            lastVersion = entry.version
        }
        if let currentVersion, let last = entries.last, lastVersion != currentVersion {
            return Break(reportID: last.reportID, entryID: last.id,
                         reason: "history ends at version \(lastVersion) but the report is at version \(currentVersion)")
        }
        return nil
    }

    public struct Summary: Sendable {
        public var reports = 0
        public var entries = 0
        public var breaks: [Break] = []
    }

    /// Checks every chain in the database, report by report, reading in pages (superuser
    /// or owner connection: history is read across agencies).
    public static func verify(connection: Connection, pageSize: Int = 5000) throws -> Summary {
        var summary = Summary()
        var after = ("", Int64(0))
        var pending: [Entry] = []
        var pendingVersion: Int64?

        func finish() {
            guard !pending.isEmpty else { return }
            summary.reports += 1
            summary.entries += pending.count
            if let broken = check(pending, currentVersion: pendingVersion) { summary.breaks.append(broken) }
            pending = []
        }

        while true {
            let rows = try connection.execute("""
                select h.id, h.report_id, h.partition, h.seq, h.version, coalesce(h.user_id::text, '') as user_id, h.device,
                       to_char(h.at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at, h.op,
                       coalesce(h.change::text, 'null') as change, h.prev_hash, h.hash, r.version as current_version
                  from app.report_history h left join sync.reports r on r.id = h.report_id
                 where (h.report_id, h.id) > (\(after.0), \(after.1))
                 order by h.report_id, h.id
                 limit \(pageSize)
                """).rows
            for row in rows {
                let entry = Entry(
                    id: row.int64("id") ?? 0, reportID: row["report_id"] ?? "", partition: row["partition"] ?? "",
                    seq: row.int64("seq") ?? 0, version: row.int64("version") ?? 0, userID: row["user_id"] ?? "",
                    device: row["device"] ?? "", at: row["at"] ?? "", op: row["op"] ?? "", change: row["change"] ?? "",
                    prevHash: row["prev_hash"] ?? "", hash: row["hash"] ?? "")
                if pending.first.map({ $0.reportID != entry.reportID }) ?? false { finish() }
                pending.append(entry)
                pendingVersion = row.int64("current_version")
                after = (entry.reportID, entry.id)
            }
            if rows.count < pageSize { break }
        }
        finish()
        // A report whose whole history is gone.
        let missing = try connection.execute("""
            select r.id from sync.reports r
             where not exists (select 1 from app.report_history h where h.report_id = r.id) order by r.id limit 10
            """).rows
        for row in missing {
            summary.breaks.append(Break(reportID: row["id"] ?? "", entryID: nil, reason: "has no history at all"))
        }
        return summary
    }
}
