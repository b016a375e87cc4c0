import ArgumentParser
import Backup
import Foundation
import Support

extension AdminDatabase {
    /// The superuser's libpq connection string, for the PostgreSQL programs run on it.
    func conninfo() throws -> String {
        guard let conninfo = database ?? ProcessInfo.processInfo.environment["TIDEWAY_ADMIN_DATABASE"] else {
            throw ValidationError("set --database or TIDEWAY_ADMIN_DATABASE")
        }
        return conninfo
    }
}

/// Where the blobs are and where PostgreSQL's programs are, for backup and restore.
struct BackupPlaces: ParsableArguments {
    @Option(help: "The blob folder (default: $TIDEWAY_BLOB_ROOT).") var blobRoot: String?
    @Option(help: "Folder of pg_dump, pg_dumpall, pg_restore and psql (default: the PATH).") var pgBin: String?

    var blobFolder: String { blobRoot ?? Config().blobRoot }
    var tools: PostgresTools { PostgresTools(binDirectory: pgBin) }
}

struct BackupCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backup",
        abstract: "Back up the database (roles, schema, data) and the photo blobs into a new folder.",
        discussion: """
            Writes roles.sql (pg_dumpall --roles-only), tideway.dump (pg_dump --format=custom of one \
            snapshot), blobs/ (every blob a photo of that snapshot names, copied after the dump; the \
            blob sweep removes nothing meanwhile) and manifest.json (sizes, SHA-256, rows and a digest \
            per table). Runs while the service runs. Exits 1 when a named blob was missing.
            """)
    @OptionGroup var admin: AdminDatabase
    @OptionGroup var places: BackupPlaces
    @Argument(help: "A new (or empty) folder for the backup.") var folder: String

    func run() throws {
        let manifest = try BackupRun(conninfo: admin.conninfo(), blobRoot: places.blobFolder, folder: folder,
                                     tools: places.tools).run()
        if !manifest.blobs.missing.isEmpty {
            print("INCOMPLETE: \(manifest.blobs.missing.count) blobs named by photos were missing from \(places.blobFolder)")
            for sha in manifest.blobs.missing.prefix(20) { print("  missing \(sha)") }
            throw ExitCode(1)
        }
    }
}

struct RestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Restore a backup folder onto an empty database and blob folder, then check it.",
        discussion: """
            The database named by --database must exist and be empty (createdb). Restores the roles, \
            then the dump, then the blobs, and compares every table's rows and digest and the blobs \
            with the backup's manifest: exits 1 on any difference. Run `tideway migrate` afterwards \
            when the new binary is newer than the backup.
            """)
    @OptionGroup var admin: AdminDatabase
    @OptionGroup var places: BackupPlaces
    @Option(help: "Parallel pg_restore jobs.") var jobs: Int = 2
    @Argument(help: "A folder `tideway backup` wrote.") var folder: String

    func run() throws {
        let summary = try RestoreRun(conninfo: admin.conninfo(), blobRoot: places.blobFolder, folder: folder,
                                     tools: places.tools, jobs: jobs).run()
        guard summary.differences.isEmpty else {
            for difference in summary.differences { print("DIFFERENT \(difference)") }
            throw ExitCode(1)
        }
    }
}
