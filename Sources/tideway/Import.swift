import ArgumentParser
import Foundation
import Mail
import Support
import TidewayImport

/// `tideway import`: a Realm app's data from MongoDB Atlas exports (docs/import.md).
struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Import a Realm app's data from mongodump folders or mongoexport files (docs/import.md).",
        discussion: """
            Reads .bson (+ .metadata.json) and Extended JSON (.json, JSON Lines or arrays), gzipped or not; \
            the collection is the file's name (BoardingReports, Photo, DutyChange, MenuData, Agency, User, \
            ChangeHistory; RChat's User and ChatMessage). Every document goes through the sync write path. Safe to run again.
            """)
    @OptionGroup var admin: AdminDatabase
    @Argument(help: "mongodump folders and/or export files.") var paths: [String]
    @Flag(help: "Read and check everything, write nothing; print what would happen.") var dryRun = false
    @Flag(help: "Refuse documents with fields Tideway's schemas do not know instead of dropping those fields.") var strict = false
    @Option(help: "Documents per transaction.") var batchSize = 1000
    @Option(help: "The report file (JSON; default: tideway-import-<UTC time>.json here). Not written on a dry run.") var report: String?
    @Option(help: "Email of the global admin the import is recorded under (default: the oldest active one).") var actor: String?
    @Option(help: "Base of the invitation links (default: $TIDEWAY_PUBLIC_URL or https://localhost:8443).") var publicURL: String?
    @Flag(help: "No progress line on standard error.") var quiet = false

    func run() throws {
        guard batchSize > 0 && batchSize <= 10_000 else { throw ValidationError("--batch-size: 1 to 10000") }
        let files: [InputFile]
        do {
            files = try InputFile.find(paths)
        } catch {
            throw ValidationError("\(error)")
        }
        guard !files.isEmpty else { throw ValidationError("no .bson or .json files under \(paths.joined(separator: ", "))") }
        var options = Importer.Options()
        options.dryRun = dryRun
        options.strict = strict
        options.batchSize = batchSize
        options.actorEmail = actor
        options.publicURL = publicURL ?? ProcessInfo.processInfo.environment["TIDEWAY_PUBLIC_URL"] ?? "https://localhost:8443"
        options.progress = !quiet
        let environment = ProcessInfo.processInfo.environment
        if let mail = MailSettings(environment: environment, publicURL: options.publicURL) {
            if let problem = mail.problem { throw ValidationError(problem) }
            options.mail = mail
        }
        let importer = Importer(connection: try admin.connect(), options: options)
        let result: ImportReport
        do {
            result = try importer.run(files)
        } catch let error as ImportError {
            throw ValidationError(error.description)
        }
        print(result.text())
        if !dryRun {
            let stamp = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: ":", with: "")
            let path = report ?? "tideway-import-\(stamp).json"
            // Owner-only: it holds the invitation links. Written in place with open(2), not with
            // FileManager.createFile, which writes a temporary file and renames it over the
            // target: given /dev/null, that replaced the device with a regular file.
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            guard fd >= 0 else { throw ValidationError("cannot write the report to \(path): \(String(cString: strerror(errno)))") }
            let bytes = Array(result.json().serialized().utf8)
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
            guard written == bytes.count else { throw ValidationError("cannot write the report to \(path)") }
            print("report: \(path)")
        }
    }
}
