import Database
import Foundation
import Support

/// Applies `Migrations/NNNN_name.sql` in order, each in its own transaction, recording
/// what ran; running it again applies only what is new. Then the repeatable files,
/// `Migrations/repeatable/NNNN_name.sql` (functions, views, triggers, policies, written to
/// run any number of times): all of them, in name order, in one transaction, whenever an
/// ordered file was applied or any repeatable file's name or SHA-256 differs from what was
/// applied last (Migrations/README.md). A file whose first line says `-- run as superuser`
/// runs as the connecting superuser; every other file runs as `tideway_owner`, so what it
/// creates is owned by that role.
public struct Migrator {
    public let connection: Connection
    public let directory: String

    public init(connection: Connection, directory: String) {
        self.connection = connection
        self.directory = directory
    }

    /// Returns the names of the files applied now (repeatable ones as `repeatable/<name>`).
    @discardableResult
    public func migrate() throws -> [String] {
        // One migrator at a time (two `make run`s, or a deploy racing a test).
        try connection.execute("select pg_advisory_lock(740600)")
        defer { _ = try? connection.execute("select pg_advisory_unlock(740600)") }
        try connection.executeScript("""
            create table if not exists public.tideway_migrations (
                name text primary key, applied_at timestamptz not null default now());
            create table if not exists public.tideway_repeatables (
                name text primary key, sha256 text not null, applied_at timestamptz not null default now())
            """)
        let done = Set(try connection.execute("select name from public.tideway_migrations").rows.compactMap { $0["name"] })
        let ordered = try files(in: directory)
        // Ordered files are never removed, except once: issue 21 folded the history into a
        // new baseline. A database built before it names files that are gone.
        if let gone = done.subtracting(ordered).sorted().first {
            throw MigrationError(file: gone, detail: "this database was built by migrations that are no longer in "
                                 + "\(directory) (the baseline was rewritten): recreate it (`make clean`, or drop the database)")
        }
        var applied: [String] = []
        for file in ordered where !done.contains(file) {
            let text = try String(contentsOfFile: directory + "/" + file, encoding: .utf8)
            try inTransaction(file) {
                try run(text)
                try connection.execute("insert into public.tideway_migrations (name) values (\(file))")
            }
            applied.append(file)
        }
        applied += try applyRepeatables(force: !applied.isEmpty)
        try ensureSecrets()
        return applied
    }

    /// Every repeatable file, in one transaction, when `force` or when their names and
    /// contents differ from what was applied last.
    private func applyRepeatables(force: Bool) throws -> [String] {
        let folder = directory + "/repeatable"
        let names = FileManager.default.fileExists(atPath: folder) ? try files(in: folder) : []
        let texts = try names.map { try String(contentsOfFile: folder + "/" + $0, encoding: .utf8) }
        let hashes = texts.map { Crypto.hex(Crypto.sha256($0)) }
        var recorded: [String: String] = [:]
        for row in try connection.execute("select name, sha256 from public.tideway_repeatables").rows {
            if let name = row["name"], let hash = row["sha256"] { recorded[name] = hash }
        }
        guard force || recorded != Dictionary(uniqueKeysWithValues: zip(names, hashes)) else { return [] }
        // Replacing functions and policies that serving workers are using can deadlock with
        // them (a rolling upgrade migrates under load); PostgreSQL then rolled the whole
        // transaction back, so it is simply run again.
        var attempt = 1
        while true {
            do {
                try applyRepeatables(names: names, texts: texts, hashes: hashes)
                return names.map { "repeatable/" + $0 }
            } catch let error as MigrationError where error.retryable && attempt < 5 {
                attempt += 1
                usleep(UInt32(100_000 * attempt))
            }
        }
    }

    private func applyRepeatables(names: [String], texts: [String], hashes: [String]) throws {
        try inTransaction("repeatable/") {
            try connection.executeScript("delete from public.tideway_repeatables")
            for (name, (text, hash)) in zip(names, zip(texts, hashes)) {
                do {
                    try run(text)
                } catch let error as DatabaseError {
                    throw MigrationError(file: "repeatable/" + name, detail: error.detail, retryable: error.isRetryableConflict)
                }
                try connection.execute("insert into public.tideway_repeatables (name, sha256) values (\(name), \(hash))")
            }
        }
    }

    /// One file's text, as `tideway_owner` unless it says `-- run as superuser`.
    private func run(_ text: String) throws {
        let asSuperuser = text.hasPrefix("-- run as superuser")
        if !asSuperuser { try connection.executeScript("set local role tideway_owner") }
        try connection.executeScript(text)
        try connection.executeScript("reset role")
    }

    /// `body` in one transaction; rolled back and reported as `file`'s failure when it fails.
    private func inTransaction(_ file: String, _ body: () throws -> Void) throws {
        do {
            try connection.executeScript("begin")
            try body()
            try connection.executeScript("commit")
        } catch {
            _ = try? connection.executeScript("rollback")
            if let error = error as? MigrationError { throw error }
            let database = error as? DatabaseError
            throw MigrationError(file: file, detail: database?.detail ?? "\(error)", retryable: database?.isRetryableConflict ?? false)
        }
    }

    func files(in folder: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder)
            .filter { $0.range(of: #"^[0-9]{4}_[a-z0-9_]+\.sql$"#, options: .regularExpression) != nil }
            .sorted()
    }

    /// The keys that sign cursors and CSRF tokens: made once, kept across restarts.
    func ensureSecrets() throws {
        for name in ["cursor_key", "csrf_key"] {
            try connection.execute("""
                insert into app.settings (key, value) values (\(name), \(Crypto.base64url(Crypto.randomBytes(32))))
                on conflict (key) do nothing
                """)
        }
    }

    public struct MigrationError: Error, CustomStringConvertible {
        public let file: String
        public let detail: String
        /// A deadlock or serialization failure: the same transaction may succeed when run again.
        public var retryable = false
        public var description: String { "migration \(file) failed: \(detail)" }
    }
}
