import Database
import Foundation

/// Applies `Migrations/NNNN_name.sql` in order, each in its own transaction, recording
/// what ran; running it again applies only what is new. A file whose first line says
/// `-- run as superuser` runs as the connecting superuser; every other file runs as
/// `tideway_owner`, so what it creates is owned by that role.
public struct Migrator {
    public let connection: Connection
    public let directory: String

    public init(connection: Connection, directory: String) {
        self.connection = connection
        self.directory = directory
    }

    /// Returns the names of the files applied now.
    @discardableResult
    public func migrate() throws -> [String] {
        // One migrator at a time (two `make run`s, or a deploy racing a test).
        try connection.execute("select pg_advisory_lock(740600)")
        defer { _ = try? connection.execute("select pg_advisory_unlock(740600)") }
        try connection.executeScript("""
            create table if not exists public.tideway_migrations (
                name text primary key, applied_at timestamptz not null default now())
            """)
        let done = Set(try connection.execute("select name from public.tideway_migrations").rows.compactMap { $0["name"] })
        var applied: [String] = []
        for file in try files() where !done.contains(file) {
            let text = try String(contentsOfFile: directory + "/" + file, encoding: .utf8)
            let asSuperuser = text.hasPrefix("-- run as superuser")
            if let failure = apply(file: file, text: text, asSuperuser: asSuperuser) {
                _ = try? connection.executeScript("rollback")
                throw MigrationError(file: file, detail: failure.detail)
            }
            applied.append(file)
        }
        try ensureSecrets()
        return applied
    }

    /// One file in one transaction; nil when it committed.
    private func apply(file: String, text: String, asSuperuser: Bool) -> DatabaseError? {
        do {
            try connection.executeScript("begin;" + (asSuperuser ? "" : " set local role tideway_owner;"))
            try connection.executeScript(text)
            try connection.executeScript("reset role")
            try connection.execute("insert into public.tideway_migrations (name) values (\(file))")
            try connection.executeScript("commit")
            return nil
        } catch {
            return error
        }
    }

    func files() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory)
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
        public var description: String { "migration \(file) failed: \(detail)" }
    }
}
