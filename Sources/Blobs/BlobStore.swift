import CSodium
import Foundation
import Support

/// Photo bytes on the filesystem under one root, named by their SHA-256
/// (`<root>/ab/cd/abcd…`), so identical photos are stored once and a name never changes
/// meaning. Bytes are written to `<root>/tmp/` first, flushed to disk, then renamed into
/// place: a reader (nginx) sees a whole file or none, and a crash leaves at most a temp
/// file (removed by the sweep) or a file no row names yet (the same).
public struct BlobStore: Sendable {
    public let root: String

    public enum Failure: Error, Sendable, Equatable {
        case io(String)
        case tooLarge
    }

    public init(root: String) { self.root = root }

    /// The path under the root, also the tail of the internal `/_blobs/` location.
    public static func relativePath(sha: String) -> String {
        "\(sha.prefix(2))/\(sha.dropFirst(2).prefix(2))/\(sha)"
    }

    public func path(sha: String) -> String { root + "/" + Self.relativePath(sha: sha) }

    public func exists(sha: String) -> Bool { access(path(sha: sha), F_OK) == 0 }

    /// A file being received: written to a temp file and hashed as the bytes go by.
    public final class Upload {
        public let tempPath: String
        public let limit: Int
        public private(set) var count = 0
        /// The first bytes, to check the format against the declared type.
        public private(set) var head: [UInt8] = []
        private var fd: Int32
        private var state = crypto_hash_sha256_state()

        init(tempPath: String, fd: Int32, limit: Int) {
            self.tempPath = tempPath
            self.fd = fd
            self.limit = limit
            crypto_hash_sha256_init(&state)
        }

        deinit { discard() }

        public func write(_ bytes: [UInt8]) throws(Failure) {
            guard fd >= 0 else { throw .io("upload already finished") }
            count += bytes.count
            if count > limit { throw .tooLarge }
            if head.count < ImageType.sniffLength { head += bytes.prefix(ImageType.sniffLength - head.count) }
            crypto_hash_sha256_update(&state, bytes, UInt64(bytes.count))
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { Foundation.write(fd, $0.baseAddress! + offset, bytes.count - offset) }
                if n < 0 {
                    if errno == EINTR { continue }
                    throw .io("write \(tempPath): \(String(cString: strerror(errno)))")
                }
                offset += n
            }
        }

        /// Flushes the bytes to disk and answers their SHA-256 (hex).
        public func finish() throws(Failure) -> String {
            guard fd >= 0 else { throw .io("upload already finished") }
            guard fsync(fd) == 0 else { throw .io("fsync \(tempPath): \(String(cString: strerror(errno)))") }
            close(fd)
            fd = -1
            var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
            crypto_hash_sha256_final(&state, &digest)
            return Crypto.hex(digest)
        }

        /// Forgets the bytes (a refused or broken upload leaves nothing behind).
        public func discard() {
            if fd >= 0 {
                close(fd)
                fd = -1
            }
            unlink(tempPath)
        }
    }

    public func beginUpload(limit: Int) throws(Failure) -> Upload {
        let folder = root + "/tmp"
        try makeFolder(folder)
        let path = folder + "/upload-" + Crypto.hex(Crypto.randomBytes(12))
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .io("create \(path): \(String(cString: strerror(errno)))") }
        return Upload(tempPath: path, fd: fd, limit: limit)
    }

    /// Moves a finished upload to its content address. Renaming over an existing file of the
    /// same name is harmless (same bytes) and keeps this idempotent. The caller holds
    /// app.lock_blob(sha) so that a sweep does not remove the file meanwhile.
    public func place(_ upload: Upload, sha: String) throws(Failure) {
        let target = path(sha: sha)
        let folder = String(target[..<target.lastIndex(of: "/")!])
        try makeFolder(folder)
        // A retried transaction places the same upload again: its temp file is already the
        // target, and a file of that name has those very bytes.
        if access(upload.tempPath, F_OK) != 0 && exists(sha: sha) { return }
        guard rename(upload.tempPath, target) == 0 else {
            throw .io("rename to \(target): \(String(cString: strerror(errno)))")
        }
        // The rename itself must survive a crash too.
        syncFolder(folder)
    }

    /// Stores bytes already in memory (inline pictures); answers their SHA-256.
    public func store(_ bytes: [UInt8], limit: Int) throws(Failure) -> (sha: String, upload: Upload) {
        let upload = try beginUpload(limit: limit)
        do {
            try upload.write(bytes)
            return (try upload.finish(), upload)
        } catch {
            upload.discard()
            throw error
        }
    }

    /// Removes a blob file; true when it was there.
    @discardableResult
    public func remove(sha: String) -> Bool { unlink(path(sha: sha)) == 0 }

    /// Every stored blob's SHA-256 (names that are not one are left alone).
    public func allBlobs() -> [String] {
        var found: [String] = []
        let fm = FileManager.default
        for first in (try? fm.contentsOfDirectory(atPath: root)) ?? [] where Self.isHexPair(first) {
            for second in (try? fm.contentsOfDirectory(atPath: root + "/" + first)) ?? [] where Self.isHexPair(second) {
                for name in (try? fm.contentsOfDirectory(atPath: root + "/" + first + "/" + second)) ?? []
                where Self.isSHA256(name) && name.hasPrefix(first + second) {
                    found.append(name)
                }
            }
        }
        return found.sorted()
    }

    /// Prefixes of every temp file the server makes in `tmp/`: uploads being received
    /// (`upload-`), the job runner's thumbnails (`thumb-`, Thumbnailer) and blobs being
    /// restored (`restore-`, `tideway restore`).
    public static let tempPrefixes = ["upload-", "thumb-", "restore-"]

    /// Temp files older than `seconds` (left by crashed uploads or a killed job runner),
    /// removed; answers how many.
    public func removeStaleTemps(olderThan seconds: TimeInterval) -> Int {
        let folder = root + "/tmp"
        var removed = 0
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        where Self.tempPrefixes.contains(where: { name.hasPrefix($0) }) {
            let path = folder + "/" + name
            guard let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date,
                  Date().timeIntervalSince(modified) > seconds else { continue }
            if unlink(path) == 0 { removed += 1 }
        }
        return removed
    }

    public static func isSHA256(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { isLowerHex($0) }
    }

    static func isHexPair(_ text: String) -> Bool { text.utf8.count == 2 && text.utf8.allSatisfy { isLowerHex($0) } }

    private static func isLowerHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }

    private func makeFolder(_ path: String) throws(Failure) {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw .io("mkdir \(path): \(error)")
        }
    }

    private func syncFolder(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }
}
