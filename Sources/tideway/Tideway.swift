import Accounts
import ArgumentParser
import Blobs
import Database
import Demo
import EventPublisher
import Foundation
import Operations
import Patrol
import Support
import Web

/// The operator's tool: migrations, accounts, demo data, maintenance.
@main
struct Tideway: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tideway",
        abstract: "Tideway's command-line tool.",
        subcommands: [Migrate.self, CreateUser.self, SeedDemo.self, Events.self, Compact.self, Jobs.self, VerifyHistory.self, SweepBlobs.self, Import.self,
                      BackupCommand.self, RestoreCommand.self])
}

/// Options every command that talks to PostgreSQL as the administrator shares.
struct AdminDatabase: ParsableArguments {
    @Option(help: "libpq connection string of a superuser (default: $TIDEWAY_ADMIN_DATABASE).")
    var database: String?

    @Option(help: "The folder with Migrations/ and Data/ (default: $TIDEWAY_HOME or the current folder).")
    var home: String?

    func connect() throws -> Connection {
        let env = ProcessInfo.processInfo.environment
        guard let conninfo = database ?? env["TIDEWAY_ADMIN_DATABASE"] else {
            throw ValidationError("set --database or TIDEWAY_ADMIN_DATABASE")
        }
        return try Connection(conninfo: conninfo)
    }

    var homeFolder: String {
        home ?? ProcessInfo.processInfo.environment["TIDEWAY_HOME"] ?? FileManager.default.currentDirectoryPath
    }
}

struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply new migrations (safe to run again).")
    @OptionGroup var admin: AdminDatabase

    func run() throws {
        let applied = try Migrator(connection: admin.connect(), directory: admin.homeFolder + "/Migrations").migrate()
        print(applied.isEmpty ? "migrations: up to date" : "migrations applied: " + applied.joined(separator: ", "))
    }
}

struct CreateUser: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create a user (or update the one with that email).")
    @OptionGroup var admin: AdminDatabase
    @Option var email: String
    @Option(help: "The password; read from $TIDEWAY_PASSWORD when omitted.") var password: String?
    @Option var role: String = "officer"
    @Option var agency: String?
    @Option var firstName: String = ""
    @Option var lastName: String = ""

    func run() throws {
        guard let role = Role(rawValue: role) else { throw ValidationError("role: officer, agencyAdmin or globalAdmin") }
        guard let password = password ?? ProcessInfo.processInfo.environment["TIDEWAY_PASSWORD"], password.count >= 8 else {
            throw ValidationError("a password of at least 8 characters is required")
        }
        let user = Accounts.NewUser(email: email, password: password, firstName: firstName, lastName: lastName, agency: agency, role: role)
        let id = try admin.connect().transaction { tx in try Accounts.create(user, in: tx, updateExisting: true) }
        print("user \(email): \(id)")
    }
}

struct SeedDemo: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Load the demo agencies, users and data (idempotent).")
    @OptionGroup var admin: AdminDatabase
    @Option(help: "Boarding reports to generate per agency.") var reports: Int = 500

    func run() throws {
        let summary = try DemoSeeder(connection: admin.connect(), dataDirectory: admin.homeFolder + "/Data").seed(reportsPerAgency: reports)
        print(summary)
    }
}

struct Compact: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove tombstones older than a duration; cursors from before them get `reset`.")
    @OptionGroup var admin: AdminDatabase
    @Option(help: "How old a tombstone must be to go: a number and d, h, m or s (90d, 12h, 0s).") var olderThan: String = "90d"

    func run() throws {
        guard let seconds = Compactor.seconds(olderThan) else {
            throw ValidationError("--older-than: a number followed by d, h, m or s, e.g. 90d")
        }
        print(try Compactor(connection: admin.connect()).compact(olderThanSeconds: seconds))
    }
}

struct Events: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Publish commit notifications to nginx (nchan) as change events; runs until stopped.")
    @Option(help: "libpq connection string (default: $TIDEWAY_DATABASE).") var database: String?
    @Option(help: "nginx's publisher socket, or one per nginx instance separated by \":\" (default: $TIDEWAY_EVENTS_SOCKET).") var socket: String?
    @Option(help: "Seconds between checks of the open-stream counts (presence) against nginx's.") var recountEvery: Double = 30
    @Option(help: "Most bytes of changes one event carries; bigger changes go as thin events (default: $TIDEWAY_EVENTS_CARRY_BYTES or 16384; 0: every event thin).")
    var carryBytes: Int?

    func run() throws {
        let env = ProcessInfo.processInfo.environment
        guard let conninfo = database ?? env["TIDEWAY_DATABASE"] else { throw ValidationError("set --database or TIDEWAY_DATABASE") }
        // One socket per nginx instance, separated by ":" as in PATH.
        guard let sockets = (socket ?? env["TIDEWAY_EVENTS_SOCKET"]).map({ $0.split(separator: ":").map(String.init) }),
              !sockets.isEmpty else {
            throw ValidationError("set --socket or TIDEWAY_EVENTS_SOCKET")
        }
        guard recountEvery > 0 else { throw ValidationError("--recount-every must be positive") }
        let carry = try carryBytes ?? env["TIDEWAY_EVENTS_CARRY_BYTES"].map {
            guard let bytes = Int($0) else { throw ValidationError("TIDEWAY_EVENTS_CARRY_BYTES: a number of bytes") }
            return bytes
        } ?? EventPublisher.defaultCarryBytes
        guard carry >= 0 else { throw ValidationError("--carry-bytes must be 0 or more") }
        // Its PostgreSQL backends show as such in pg_stat_activity (and Bench/push_profile.py
        // counts their CPU apart from the workers'); an operator's PGAPPNAME wins.
        setenv("PGAPPNAME", "tideway events", 0)
        Metrics.startProcess(role: "events", config: Config())
        EventPublisher(conninfo: conninfo, publishSockets: sockets, recountEvery: recountEvery, carryBytes: carry).run()
    }
}

struct Jobs: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run background jobs (photo offload to the blob store, dashboard summaries, blob sweep) until stopped.",
        discussion: "Connects as $TIDEWAY_DATABASE (the worker role); blobs under $TIDEWAY_BLOB_ROOT.")
    @Option(help: "Seconds between sweeps of unreferenced blobs.") var sweepEvery: Double = 300
    @Flag(help: "Run the jobs due now and fold the dashboard summaries, then exit.") var once = false
    @Option(help: .hidden) var pauseBeforeCommit: Double = 0

    func run() throws {
        let config = Config()
        let runner = JobRunner(connection: try Connection(conninfo: config.database), config: config)
        runner.pauseBeforeCommit = pauseBeforeCommit
        if once {
            print("jobs run: \(try runner.runDue())")
            print("summaries: \(try runner.foldSummaries()) reports folded")
            return
        }
        Metrics.startProcess(role: "jobs", config: config)
        try runner.runForever(sweepEvery: sweepEvery)
    }
}

struct VerifyHistory: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check every report's history chain; name the first broken entry (exit 1 when any).")
    @OptionGroup var admin: AdminDatabase

    func run() throws {
        let summary = try HistoryChain.verify(connection: admin.connect())
        print("history: \(summary.reports) reports, \(summary.entries) entries checked")
        guard summary.breaks.isEmpty else {
            for broken in summary.breaks { print("BROKEN \(broken)") }
            throw ExitCode(1)
        }
        print("history: every chain holds")
    }
}

struct SweepBlobs: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove blob files that no photo names any more (and done jobs older than a week).",
        discussion: "Connects as $TIDEWAY_DATABASE; blobs under $TIDEWAY_BLOB_ROOT.")

    func run() throws {
        let config = Config()
        let connection = try Connection(conninfo: config.database)
        let result = try BlobSweep.run(connection: connection, store: BlobStore(root: config.blobRoot))
        print("blobs: \(result.removed) removed, \(result.kept) kept, \(result.temps) stale temp files removed")
        try JobRunner(connection: connection, config: config).forgetFinishedJobs()
    }
}
