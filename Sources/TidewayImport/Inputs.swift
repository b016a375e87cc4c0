import CZlib
import Foundation

/// The files an import reads: what `mongodump` writes (`<db>/<Collection>.bson`, with
/// `.metadata.json` beside it; `--gzip` adds `.gz`) and what `mongoexport` writes
/// (`<Collection>.json`, JSON Lines or an array, maybe gzipped). A folder is searched
/// (with its sub-folders, in name order); the collection is the file's name.
package struct InputFile: Sendable, Equatable {
    package enum Format: String, Sendable { case bson, extendedJSON }
    package let path: String
    package let collection: String
    package let format: Format
    package let gzipped: Bool

    /// nil for files that are not documents (`.metadata.json`, anything else).
    package init?(path: String) {
        var name = (path as NSString).lastPathComponent
        if name.hasPrefix(".") || name.hasSuffix(".metadata.json") || name.hasSuffix(".metadata.json.gz") { return nil }
        gzipped = name.hasSuffix(".gz")
        if gzipped { name = String(name.dropLast(3)) }
        if name.hasSuffix(".bson") {
            format = .bson
            name = String(name.dropLast(5))
        } else if name.hasSuffix(".json") || name.hasSuffix(".jsonl") {
            format = .extendedJSON
            name = String(name[..<name.lastIndex(of: ".")!])
        } else {
            return nil
        }
        self.path = path
        self.collection = name
    }

    /// The files under the given paths, folders searched recursively, each file once.
    package static func find(_ paths: [String]) throws -> [InputFile] {
        var found: [InputFile] = []
        var seen: Set<String> = []
        for path in paths {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
                throw ImportError("no such file or folder: \(path)")
            }
            var candidates: [String] = []
            if isFolder.boolValue {
                guard let walker = FileManager.default.enumerator(atPath: path) else { throw ImportError("cannot read folder \(path)") }
                for case let relative as String in walker { candidates.append(path + "/" + relative) }
                candidates.sort()
            } else {
                candidates = [path]
                if InputFile(path: path) == nil { throw ImportError("\(path): not a .bson or .json file (optionally .gz)") }
            }
            for candidate in candidates {
                guard let file = InputFile(path: candidate) else { continue }
                let key = (candidate as NSString).standardizingPath
                if seen.insert(key).inserted { found.append(file) }
            }
        }
        return found
    }

    /// The file's bytes, inflated when gzipped.
    package func bytes() throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else { throw ImportError("cannot read \(path)") }
        let raw = [UInt8](data)
        return gzipped ? try Gzip.inflate(raw, name: path) : raw
    }

    /// The documents one at a time, with the fraction of the file read after each.
    package func forEachDocument(_ body: (Int, Double, Result<BSONValue, ReadError>) throws -> Void) throws {
        let content = try bytes()
        let total = Double(max(content.count, 1))
        switch format {
        case .bson: try BSONReader.forEach(in: content) { try body($0, Double($1) / total, $2) }
        case .extendedJSON: try ExtendedJSONReader.forEach(in: content) { try body($0, Double($1) / total, $2) }
        }
    }

    /// The size on disk (for the progress line).
    package var diskBytes: Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
    }

    package func read() throws -> BSONReader.Output {
        let content = try bytes()
        switch format {
        case .bson: return BSONReader.documents(in: content)
        case .extendedJSON: return ExtendedJSONReader.documents(in: content)
        }
    }
}

package struct ImportError: Error, CustomStringConvertible, Sendable {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// gzip (RFC 1952) through zlib, members one after another as `gzip` writes them.
package enum Gzip {
    package static func inflate(_ input: [UInt8], name: String = "input") throws -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(input.count * 4)
        var stream = z_stream()
        // 15 + 16: a gzip wrapper, not zlib's.
        guard inflateInit2_(&stream, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw ImportError("\(name): zlib would not start")
        }
        defer { inflateEnd(&stream) }
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        try input.withUnsafeBufferPointer { inBuffer in
            stream.next_in = UnsafeMutablePointer(mutating: inBuffer.baseAddress)
            stream.avail_in = UInt32(inBuffer.count)
            while true {
                let status = chunk.withUnsafeMutableBufferPointer { out -> Int32 in
                    stream.next_out = out.baseAddress
                    stream.avail_out = UInt32(out.count)
                    return CZlib.inflate(&stream, Z_NO_FLUSH)
                }
                output.append(contentsOf: chunk[0..<(chunk.count - Int(stream.avail_out))])
                if status == Z_STREAM_END {
                    if stream.avail_in == 0 { return }
                    inflateReset(&stream)  // another member follows
                    continue
                }
                guard status == Z_OK else {
                    throw ImportError("\(name): not valid gzip (zlib: \(stream.msg.map { String(cString: $0) } ?? "error \(status)"))")
                }
                if stream.avail_in == 0 && stream.avail_out != 0 {
                    throw ImportError("\(name): the gzip stream is truncated")
                }
            }
        }
        return output
    }
}
