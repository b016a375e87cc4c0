import Foundation

/// PostgreSQL's own client programs (Debian's postgresql-client): pg_dump, pg_dumpall,
/// pg_restore and psql, found in `binDirectory` or on the PATH, run to completion with
/// their standard error passed through.
public struct PostgresTools: Sendable {
    public let binDirectory: String?

    public init(binDirectory: String? = nil) { self.binDirectory = binDirectory }

    func path(of program: String) throws -> String {
        if let binDirectory { return binDirectory + "/" + program }
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        for folder in folders where access("\(folder)/\(program)", X_OK) == 0 { return "\(folder)/\(program)" }
        throw Files.Failure("\(program) not found on the PATH (install postgresql-client, or pass --pg-bin)")
    }

    /// Runs `program` with `arguments`; throws when it fails. Standard output goes to
    /// `output` (a file path) when given, else it is discarded.
    func run(_ program: String, _ arguments: [String], output: String? = nil) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try path(of: program))
        process.arguments = arguments
        if let output {
            guard FileManager.default.createFile(atPath: output, contents: nil), let handle = FileHandle(forWritingAtPath: output) else {
                throw Files.Failure("cannot write \(output)")
            }
            process.standardOutput = handle
        } else {
            process.standardOutput = FileHandle.nullDevice
        }
        try process.run()
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw Files.Failure("\(program) failed (status \(process.terminationStatus)); its messages are above")
        }
    }
}
