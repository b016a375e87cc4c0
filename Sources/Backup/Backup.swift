import Blobs
import Database
import Foundation
import Support

/// `tideway backup <folder>`: a consistent copy of one Tideway installation's data.
///
/// 1. Roles: `pg_dumpall --roles-only` (the owner and worker roles, with their passwords).
/// 2. Database: a snapshot is exported from a REPEATABLE READ transaction that also takes
///    the census (rows and digest per table, every blob a photo names); `pg_dump
///    --format=custom --snapshot=…` dumps exactly that snapshot.
/// 3. Blobs: after the dump, every blob the snapshot names is copied and its SHA-256
///    checked against its name. From step 2 until the copy is done the backup holds an
///    advisory lock under which the blob sweep removes nothing
///    (`app.blob_removable`, Migrations/repeatable/0085_backup.sql), so a photo deleted
///    meanwhile still has its bytes in the copy.
/// 4. `manifest.json`, written last: a folder without one is an unfinished backup.
public struct BackupRun {
    public let conninfo: String
    public let blobRoot: String
    public let folder: String
    public let tools: PostgresTools

    public init(conninfo: String, blobRoot: String, folder: String, tools: PostgresTools) {
        self.conninfo = conninfo
        self.blobRoot = blobRoot
        self.folder = folder
        self.tools = tools
    }

    /// The key of the advisory lock a backup holds (the sweep's `app.blob_removable` reads it).
    static let lockSQL: SQL = "select pg_try_advisory_lock(hashtextextended('tideway-backup', 0)) as locked"

    public func run(progress: (String) -> Void = { print($0) }) throws -> Manifest {
        let started = ContinuousClock.now
        let fm = FileManager.default
        if let existing = try? fm.contentsOfDirectory(atPath: folder), !existing.isEmpty {
            throw Files.Failure("\(folder) is not empty: back up into a new folder")
        }
        var seconds: [String: Double] = [:]

        // Held until the blobs are copied: the sweep removes nothing meanwhile.
        let guardConnection = try Connection(conninfo: conninfo)
        guard try guardConnection.execute(Self.lockSQL).first?.bool("locked") == true else {
            throw Files.Failure("another backup is running")
        }
        try Files.makeFolders(folder)

        var step = ContinuousClock.now
        try tools.run("pg_dumpall", ["--roles-only", "--dbname=\(conninfo)", "--file=\(folder)/\(Manifest.rolesFile)"])
        seconds["roles"] = Backup.seconds(since: step)
        progress(String(format: "roles: %.2f s", seconds["roles"]!))

        step = ContinuousClock.now
        let snapshotConnection = try Connection(conninfo: conninfo)
        let (census, database, version) = try snapshotConnection.transaction(snapshot: true) { tx in
            let row = try tx.query("""
                select pg_export_snapshot() as snapshot, current_database() as database,
                       current_setting('server_version') as version
                """).first
            guard let snapshot = row?["snapshot"] else { throw Files.Failure("no snapshot exported") }
            let census = try Census.take(in: tx)
            // The transaction stays open (and its snapshot alive) while pg_dump reads it.
            try tools.run("pg_dump", ["--format=custom", "--snapshot=\(snapshot)", "--dbname=\(conninfo)",
                                      "--file=\(folder)/\(Manifest.dumpFile)"])
            return (census, row?["database"] ?? "", row?["version"] ?? "")
        }
        seconds["dump"] = Backup.seconds(since: step)
        var files: [String: Manifest.File] = [:]
        for name in [Manifest.rolesFile, Manifest.dumpFile] {
            guard let summary = try Files.hash(folder + "/" + name) else { throw Files.Failure("\(name) was not written") }
            files[name] = Manifest.File(bytes: summary.bytes, sha256: summary.sha256)
        }
        let rows = census.tables.values.reduce(Int64(0)) { $0 + $1.rows }
        progress(String(format: "database: %.2f s (%@ rows in %d tables, dump %@)", seconds["dump"]!,
                        "\(rows)", census.tables.count, Backup.size(files[Manifest.dumpFile]!.bytes)))

        step = ContinuousClock.now
        let store = BlobStore(root: blobRoot)
        var missing: [String] = []
        var bytes: Int64 = 0
        for sha in census.blobs.keys.sorted() {
            let relative = BlobStore.relativePath(sha: sha)
            let copied = try Files.copy(store.path(sha: sha), to: "\(folder)/\(Manifest.blobFolder)/\(relative)")
            guard let copied, copied.sha256 == sha else {
                if copied != nil { unlink("\(folder)/\(Manifest.blobFolder)/\(relative)") }
                missing.append(sha)
                continue
            }
            bytes += copied.bytes
        }
        _ = try? guardConnection.execute("select pg_advisory_unlock_all()")
        seconds["blobs"] = Backup.seconds(since: step)
        progress(String(format: "blobs: %.2f s (%d files, %@)", seconds["blobs"]!, census.blobs.count - missing.count,
                        Backup.size(bytes)))

        seconds["total"] = Backup.seconds(since: started)
        var present = census.blobs
        for sha in missing { present[sha] = nil }
        let manifest = Manifest(
            createdAt: UTCTimestamp.string(Date()), database: database, serverVersion: version, files: files,
            tables: census.tables.mapValues { Manifest.Table(rows: $0.rows, digest: $0.digest) },
            blobs: .init(count: present.count, bytes: bytes, digest: Manifest.blobDigest(present), missing: missing),
            seconds: seconds)
        try Files.write(try manifest.encoded(), to: folder + "/" + Manifest.fileName)
        progress(String(format: "backup written to %@ in %.2f s", folder, seconds["total"]!))
        return manifest
    }
}

enum Backup {
    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    static func size(_ bytes: Int64) -> String {
        bytes >= 1 << 20 ? String(format: "%.1f MiB", Double(bytes) / 1_048_576) : String(format: "%.1f KiB", Double(bytes) / 1024)
    }
}
