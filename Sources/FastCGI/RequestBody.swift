/// The request body, read on demand: most bodies are read whole with a limit, blob
/// uploads are streamed to disk chunk by chunk.
public final class RequestBody {
    public enum Failure: Error, Sendable { case tooLarge, truncated }

    private let readInto: (UnsafeMutableRawBufferPointer) -> Int
    public let declaredLength: Int?

    public init(declaredLength: Int?, read: @escaping (UnsafeMutableRawBufferPointer) -> Int) {
        self.declaredLength = declaredLength
        self.readInto = read
    }

    public convenience init(bytes: [UInt8]) {
        var offset = 0
        self.init(declaredLength: bytes.count) { buffer in
            let n = min(buffer.count, bytes.count - offset)
            if n > 0 {
                bytes.withUnsafeBytes { src in
                    buffer.baseAddress!.copyMemory(from: src.baseAddress! + offset, byteCount: n)
                }
            }
            offset += n
            return n
        }
    }

    /// Up to `max` bytes; an empty array at the end of the body.
    public func readChunk(max: Int = 64 * 1024) -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: max)
        let n = chunk.withUnsafeMutableBytes { readInto($0) }
        chunk.removeSubrange(Swift.max(n, 0)...)
        return chunk
    }

    /// The whole body, refusing more than `limit` bytes before reading them.
    public func readAll(limit: Int) throws(Failure) -> [UInt8] {
        if let declared = declaredLength, declared > limit { throw .tooLarge }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(declaredLength ?? 0)
        while true {
            // Chunks sized to what is still expected (one more byte shows the end): a fixed
            // 256 KiB chunk, zeroed for every read, cost more than parsing a small body.
            let expected = declaredLength.map { $0 > bytes.count ? $0 - bytes.count + 1 : 4096 } ?? 256 * 1024
            let chunk = readChunk(max: min(expected, 256 * 1024))
            if chunk.isEmpty { break }
            bytes += chunk
            if bytes.count > limit { throw .tooLarge }
        }
        if let declared = declaredLength, bytes.count < declared { throw .truncated }
        return bytes
    }
}
