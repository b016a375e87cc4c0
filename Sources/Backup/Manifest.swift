import Foundation
import Support

/// `manifest.json` of a backup folder: what is in it and how to check it.
///
///     roles.sql        pg_dumpall --roles-only (roles live outside any one database)
///     tideway.dump     pg_dump --format=custom of the database, from the snapshot below
///     blobs/ab/cd/<sha256>   every blob a photo of that snapshot names, copied after the dump
///     manifest.json    this: files with sizes and SHA-256, the snapshot's census (rows and
///                      a digest per table), the blobs' count, bytes and digest, timings
public struct Manifest: Codable, Sendable {
    public static let currentFormat = "tideway-backup/1"
    public static let fileName = "manifest.json"
    public static let rolesFile = "roles.sql"
    public static let dumpFile = "tideway.dump"
    public static let blobFolder = "blobs"

    public struct File: Codable, Sendable, Equatable {
        public var bytes: Int64
        public var sha256: String
    }

    public struct Table: Codable, Sendable, Equatable {
        public var rows: Int64
        public var digest: String
    }

    public struct Blobs: Codable, Sendable {
        public var count: Int
        public var bytes: Int64
        /// SHA-256 of the sorted lines `<sha256> <bytes>\n`, one per blob: the set, checkable
        /// without listing it here.
        public var digest: String
        /// Named by a photo but absent (or not matching its name) in the blob store when copied.
        public var missing: [String]
    }

    public var format = Manifest.currentFormat
    public var createdAt: String
    public var database: String
    public var serverVersion: String
    public var files: [String: File]
    public var tables: [String: Table]
    public var blobs: Blobs
    /// Seconds per step (roles, dump, blobs, total).
    public var seconds: [String: Double]

    func encoded() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(self), as: UTF8.self) + "\n"
    }

    static func read(from folder: String) throws -> Manifest {
        let path = folder + "/" + fileName
        guard let data = FileManager.default.contents(atPath: path) else {
            throw Files.Failure("no \(fileName) in \(folder): not a backup folder (or an unfinished one)")
        }
        let manifest: Manifest
        do {
            manifest = try JSONDecoder().decode(Manifest.self, from: data)
        } catch {
            throw Files.Failure("\(path) cannot be read: \(error)")
        }
        guard manifest.format == currentFormat else {
            throw Files.Failure("\(path): format \(manifest.format), this tideway reads \(currentFormat)")
        }
        return manifest
    }

    var census: Census {
        Census(tables: tables.mapValues { Census.Table(rows: $0.rows, digest: $0.digest) }, blobs: [:])
    }

    static func blobDigest(_ blobs: [String: Int64]) -> String {
        let lines = blobs.keys.sorted().map { "\($0) \(blobs[$0]!)\n" }.joined()
        return Crypto.hex(Crypto.sha256(lines))
    }
}
