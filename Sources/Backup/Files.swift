import CSodium
import Foundation
import Support

/// Files of a backup: copied and checked by their SHA-256, streamed (a dump may be large).
enum Files {
    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    struct Summary {
        let bytes: Int64
        let sha256: String
    }

    static let chunk = 1 << 20

    /// The size and SHA-256 (hex) of a file; nil when it does not exist.
    static func hash(_ path: String) throws -> Summary? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw Failure("open \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        return try stream(from: fd, path: path) { _ in }
    }

    /// Copies `source` to `destination` through a temp file (`tempPrefix` + random, in
    /// `tempFolder` or else the destination's folder, on the same filesystem), flushed and
    /// renamed into place; answers what was copied (nil: no source).
    static func copy(_ source: String, to destination: String, tempFolder: String? = nil, tempPrefix: String = ".copy-") throws -> Summary? {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else {
            if errno == ENOENT { return nil }
            throw Failure("open \(source): \(String(cString: strerror(errno)))")
        }
        defer { close(input) }
        let folder = (destination as NSString).deletingLastPathComponent
        try makeFolders(folder)
        if let tempFolder { try makeFolders(tempFolder) }
        let temp = (tempFolder ?? folder) + "/" + tempPrefix + Crypto.hex(Crypto.randomBytes(8))
        let output = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard output >= 0 else { throw Failure("create \(temp): \(String(cString: strerror(errno)))") }
        do {
            let summary = try stream(from: input, path: source) { bytes in
                var offset = 0
                while offset < bytes.count {
                    let n = Foundation.write(output, bytes.baseAddress! + offset, bytes.count - offset)
                    if n < 0 {
                        if errno == EINTR { continue }
                        throw Failure("write \(temp): \(String(cString: strerror(errno)))")
                    }
                    offset += n
                }
            }
            guard fsync(output) == 0 else { throw Failure("fsync \(temp): \(String(cString: strerror(errno)))") }
            close(output)
            guard rename(temp, destination) == 0 else { throw Failure("rename to \(destination): \(String(cString: strerror(errno)))") }
            return summary
        } catch {
            close(output)
            unlink(temp)
            throw error
        }
    }

    private static func stream(from fd: Int32, path: String, _ each: (UnsafeRawBufferPointer) throws -> Void) throws -> Summary {
        var state = crypto_hash_sha256_state()
        crypto_hash_sha256_init(&state)
        var buffer = [UInt8](repeating: 0, count: chunk)
        var total: Int64 = 0
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, chunk) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure("read \(path): \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            total += Int64(n)
            try buffer.withUnsafeBytes { all in
                let part = UnsafeRawBufferPointer(rebasing: all[0..<n])
                crypto_hash_sha256_update(&state, part.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(n))
                try each(part)
            }
        }
        var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        crypto_hash_sha256_final(&state, &digest)
        return Summary(bytes: total, sha256: Crypto.hex(digest))
    }

    static func makeFolders(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw Failure("mkdir \(path): \(error.localizedDescription)")
        }
    }

    static func write(_ text: String, to path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8)) else {
            throw Failure("cannot write \(path)")
        }
    }
}
