import Blobs
import Database
import Foundation
import Support

/// `tideway restore <folder>`: a backup (BackupRun) onto an empty database and blob folder.
///
/// 1. Check: the manifest, the dump's and roles' sizes and SHA-256; the target database
///    must hold nothing of Tideway (no `app` or `sync` schema).
/// 2. Roles: roles.sql through psql, each `CREATE ROLE` tolerating a role that exists
///    already (the cluster's own superuser, or roles of an earlier restore), and without
///    touching the role that runs the restore.
/// 3. Database: `pg_restore --exit-on-error` of the dump (schema, data, grants, policies).
/// 4. Blobs: each file into the blob root (through `<root>/tmp/restore-*`, renamed into
///    place), its SHA-256 checked against its name; the set checked against the manifest.
/// 5. Verify: the restored database's census (rows and digest of every table, the blobs
///    photos name) must equal the backup's.
/// 6. Cursors: every partition's clock, and its compaction horizon, move `cursorGap`
///    numbers on. Devices may have synced past the backup (changes the restore has lost);
///    their cursors stand before the new horizon, so their next pull of each partition
///    answers `reset` (docs/sync-protocol.md) and they fetch the restored state afresh,
///    while a change made after the restore is numbered past any cursor of the lost
///    timeline, so none can be mistaken for a position in it. Every device resets, those
///    whose cursor was behind the backup too: one full download each, never a silent gap.
public struct RestoreRun {
    /// More changes than one partition could have taken between a backup and its restore.
    public static let cursorGap: Int64 = 1_000_000_000

    public let conninfo: String
    public let blobRoot: String
    public let folder: String
    public let tools: PostgresTools
    public let jobs: Int

    public init(conninfo: String, blobRoot: String, folder: String, tools: PostgresTools, jobs: Int = 2) {
        self.conninfo = conninfo
        self.blobRoot = blobRoot
        self.folder = folder
        self.tools = tools
        self.jobs = jobs
    }

    public struct Summary: Sendable {
        public var tables = 0
        public var rows: Int64 = 0
        public var blobs = 0
        public var blobBytes: Int64 = 0
        public var seconds: [String: Double] = [:]
        /// What did not come back as it was backed up (empty: everything did).
        public var differences: [String] = []
    }

    public func run(progress: (String) -> Void = { print($0) }) throws -> Summary {
        let started = ContinuousClock.now
        var summary = Summary()
        var step = ContinuousClock.now
        let manifest = try Manifest.read(from: folder)
        for (name, expected) in manifest.files.sorted(by: { $0.key < $1.key }) {
            guard let found = try Files.hash(folder + "/" + name) else { throw Files.Failure("\(name) is missing from \(folder)") }
            guard found.bytes == expected.bytes, found.sha256 == expected.sha256 else {
                throw Files.Failure("\(name) is damaged: \(found.bytes) bytes, SHA-256 \(found.sha256); the manifest says \(expected.bytes) bytes, \(expected.sha256)")
            }
        }
        let connection = try Connection(conninfo: conninfo)
        let target = try connection.execute("""
            select current_user as me, current_database() as database,
                   (select count(*) from pg_namespace where nspname in ('app', 'sync')) as tideway
            """).first
        guard target?.int("tideway") == 0 else {
            throw Files.Failure("database \(target?["database"] ?? "") is not empty (it has Tideway's schemas): restore needs an empty database")
        }
        summary.seconds["check"] = Backup.seconds(since: step)
        progress(String(format: "check: %.2f s (backup of %@, %@, PostgreSQL %@)", summary.seconds["check"]!,
                        manifest.database, manifest.createdAt, manifest.serverVersion))

        step = ContinuousClock.now
        let rolesScript = Self.rolesScript(try String(contentsOfFile: folder + "/" + Manifest.rolesFile, encoding: .utf8),
                                               runningAs: target?["me"] ?? "")
        let scriptPath = NSTemporaryDirectory() + "/tideway-roles-" + Crypto.hex(Crypto.randomBytes(6)) + ".sql"
        try Files.write(rolesScript, to: scriptPath)
        defer { unlink(scriptPath) }
        try tools.run("psql", ["-X", "-q", "-v", "ON_ERROR_STOP=1", "--dbname=\(conninfo)", "--file=\(scriptPath)"])
        summary.seconds["roles"] = Backup.seconds(since: step)
        progress(String(format: "roles: %.2f s", summary.seconds["roles"]!))

        step = ContinuousClock.now
        try tools.run("pg_restore", ["--exit-on-error", "--jobs=\(max(1, jobs))", "--dbname=\(conninfo)",
                                     folder + "/" + Manifest.dumpFile])
        summary.seconds["database"] = Backup.seconds(since: step)
        progress(String(format: "database: %.2f s", summary.seconds["database"]!))

        step = ContinuousClock.now
        let store = BlobStore(root: blobRoot)
        let source = folder + "/" + Manifest.blobFolder
        var restored: [String: Int64] = [:]
        for sha in BlobStore(root: source).allBlobs() {
            let relative = BlobStore.relativePath(sha: sha)
            let copied: Files.Summary?
            if let existing = try Files.hash(store.path(sha: sha)), existing.sha256 == sha {
                copied = existing  // already there with the right bytes (content-addressed)
            } else {
                copied = try Files.copy(source + "/" + relative, to: store.path(sha: sha), tempFolder: blobRoot + "/tmp",
                                        tempPrefix: "restore-")
            }
            guard let copied, copied.sha256 == sha else {
                unlink(store.path(sha: sha))
                throw Files.Failure("blob \(sha) in the backup does not match its name: the backup is damaged")
            }
            restored[sha] = copied.bytes
            summary.blobBytes += copied.bytes
        }
        summary.blobs = restored.count
        summary.seconds["blobs"] = Backup.seconds(since: step)
        progress(String(format: "blobs: %.2f s (%d files, %@)", summary.seconds["blobs"]!, summary.blobs, Backup.size(summary.blobBytes)))

        step = ContinuousClock.now
        let census = try Connection(conninfo: conninfo).transaction(snapshot: true) { tx in try Census.take(in: tx) }
        summary.tables = census.tables.count
        summary.rows = census.tables.values.reduce(0) { $0 + $1.rows }
        var expected = manifest.census
        expected.blobs = census.blobs  // compared below, against the files
        summary.differences = census.differences(from: expected)
        if Manifest.blobDigest(restored) != manifest.blobs.digest || restored.count != manifest.blobs.count {
            summary.differences.append("blob files: \(restored.count), the backup listed \(manifest.blobs.count) (or other contents)")
        }
        let absent = census.blobs.keys.filter { restored[$0] == nil && !manifest.blobs.missing.contains($0) }
        if !absent.isEmpty {
            summary.differences.append("\(absent.count) blobs named by photos are not in the blob folder, e.g. \(absent.sorted()[0])")
        }
        summary.seconds["verify"] = Backup.seconds(since: step)
        step = ContinuousClock.now
        let moved = try Connection(conninfo: conninfo).execute(
            "update app.partition_clocks set seq = seq + \(Self.cursorGap), compacted_seq = seq + \(Self.cursorGap)").affected
        summary.seconds["cursors"] = Backup.seconds(since: step)
        progress(String(format: "cursors: %.2f s (%d partitions moved on: devices reset on their next pull)",
                        summary.seconds["cursors"]!, moved))
        summary.seconds["total"] = Backup.seconds(since: started)
        progress(String(format: "verify: %.2f s (%d tables, %@ rows: %@)", summary.seconds["verify"]!, summary.tables,
                        "\(summary.rows)", summary.differences.isEmpty ? "as backed up" : "\(summary.differences.count) differences"))
        progress(String(format: "restored in %.2f s", summary.seconds["total"]!))
        return summary
    }

    /// roles.sql made safe to run on a cluster that has some of the roles already: a
    /// `CREATE ROLE` that exists is skipped, and the role running the restore is left as it
    /// is (its password and attributes on this host stay its own).
    static func rolesScript(_ dumped: String, runningAs me: String) -> String {
        func name(after prefix: String, in line: Substring) -> String? {
            guard line.hasPrefix(prefix) else { return nil }
            let rest = line.dropFirst(prefix.count)
            guard rest.hasPrefix("\"") else { return String(rest.prefix { $0 != " " && $0 != ";" }) }
            // A quoted identifier: up to the quote that is not doubled.
            var name = ""
            var index = rest.index(after: rest.startIndex)
            while index < rest.endIndex {
                let next = rest.index(after: index)
                if rest[index] == "\"" {
                    guard next < rest.endIndex, rest[next] == "\"" else { return name }
                    name.append("\"")
                    index = rest.index(after: next)
                } else {
                    name.append(rest[index])
                    index = next
                }
            }
            return name
        }
        var out: [String] = []
        for line in dumped.split(separator: "\n", omittingEmptySubsequences: false) {
            if let role = name(after: "CREATE ROLE ", in: line) {
                if role == me { continue }
                out.append("DO $tideway$ BEGIN \(line) EXCEPTION WHEN duplicate_object THEN NULL; END $tideway$;")
            } else if let role = name(after: "ALTER ROLE ", in: line), role == me {
                continue
            } else {
                out.append(String(line))
            }
        }
        return out.joined(separator: "\n")
    }
}
