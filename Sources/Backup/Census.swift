import Database

/// What a database holds, in a form two databases can be compared by: per table of the
/// schemas `app`, `sync` and `public` (the migration records), its row count and a digest
/// of its rows (the sum of the first 60 bits of each row's md5, so order does not matter),
/// and the photo blobs its rows name. A backup writes the census of its snapshot into the
/// manifest; a restore takes the census of what it restored and compares.
struct Census: Equatable {
    struct Table: Equatable {
        var rows: Int64
        var digest: String
    }

    var tables: [String: Table] = [:]
    /// SHA-256 -> bytes of every blob a photo names.
    var blobs: [String: Int64] = [:]

    /// Text forms that do not depend on the session: the row text is what is hashed.
    static let settings: [SQL] = [
        "set local timezone = 'UTC'", "set local datestyle = 'ISO, YMD'", "set local intervalstyle = 'postgres'",
        "set local extra_float_digits = 1", "set local bytea_output = 'hex'",
    ]

    /// The census as `tx` sees the database (run it in the backup's snapshot).
    static func take(in tx: Transaction) throws -> Census {
        _ = try tx.queries(settings)
        let names = try tx.query("""
            select format('%I.%I', schemaname, tablename) as name from pg_tables
             where schemaname in ('app', 'sync', 'public') order by 1
            """).rows.compactMap { $0["name"] }
        var census = Census()
        if !names.isEmpty {
            let statements: [SQL] = names.map { name in
                SQL(unsafeSQL: """
                    select count(*) as rows,
                           coalesce(sum(('x' || left(md5(t::text), 15))::bit(60)::bigint::numeric), 0)::text as digest
                      from \(name) t
                    """)
            }
            for (name, result) in zip(names, try tx.queries(statements)) {
                census.tables[name] = Table(rows: result.first?.int64("rows") ?? 0, digest: result.first?["digest"] ?? "")
            }
        }
        if names.contains("app.photo_blobs") {
            for row in try tx.query("select sha256, max(bytes) as bytes from app.photo_blobs group by sha256").rows {
                if let sha = row["sha256"] { census.blobs[sha] = row.int64("bytes") ?? 0 }
            }
        }
        return census
    }

    /// Differences from `other` (what a restore found against the backup), for people.
    func differences(from expected: Census) -> [String] {
        var found: [String] = []
        for name in Set(tables.keys).union(expected.tables.keys).sorted() {
            let here = tables[name], there = expected.tables[name]
            if here != there {
                func show(_ t: Table?) -> String { t.map { "\($0.rows) rows, digest \($0.digest)" } ?? "missing" }
                found.append("\(name): \(show(here)), the backup had \(show(there))")
            }
        }
        if blobs != expected.blobs {
            found.append("photo blobs named: \(blobs.count), the backup had \(expected.blobs.count)")
        }
        return found
    }
}
