import Support

/// A position in a partition's change feed: after change number `seq`, and, within the
/// changes of one transaction that share a number, after (`collection`, `id`).
///
/// Sent to clients as `c:` + base64url(payload + MAC). The MAC (HMAC-SHA-256 with the
/// server's key, over the partition and the payload) makes a forged cursor, or one of
/// another partition, a 400 rather than a way to read anything.
public struct Cursor: Sendable, Equatable {
    public var seq: Int64
    /// Within number `seq`, after this collection's document `id`. `~` sorts after every
    /// collection name: after everything numbered `seq`.
    public var collection: String
    public var id: String
    /// The partition's compaction horizon when this cursor was given: a cursor behind the
    /// horizon is fine if no compaction happened since (a fresh client paging from null
    /// after a compaction), and must reset if one did.
    public var horizon: Int64

    public init(seq: Int64, collection: String = "", id: String = "", horizon: Int64 = 0) {
        self.seq = seq
        self.collection = collection
        self.id = id
        self.horizon = horizon
    }

    /// After every change numbered up to `seq`.
    public static func after(_ seq: Int64, horizon: Int64 = 0) -> Cursor { Cursor(seq: seq, collection: "~", horizon: horizon) }

    /// From the beginning (a `null` cursor).
    public static let start = Cursor(seq: 0)

    /// 2 adds the horizon after `seq`; version 1 cursors (no horizon) are still read.
    static let version: UInt8 = 2
    static let macLength = 16

    public func encode(partition: String, key: [UInt8]) -> String {
        var payload: [UInt8] = [Self.version]
        withUnsafeBytes(of: seq.bigEndian) { payload += $0 }
        withUnsafeBytes(of: horizon.bigEndian) { payload += $0 }
        let collectionBytes = Array(collection.utf8)
        payload.append(UInt8(collectionBytes.count))
        payload += collectionBytes
        payload += Array(id.utf8)
        return "c:" + Crypto.base64url(payload + Self.mac(payload, partition: partition, key: key))
    }

    /// nil for anything that is not a cursor this server made for this partition.
    public static func decode(_ text: String, partition: String, key: [UInt8]) -> Cursor? {
        read(text, partition: partition, key: key)?.cursor
    }

    /// As `decode`, and whether `text` is exactly what `encode` makes of the cursor for this
    /// partition now (this version, canonical base64url), so that an answer may give it back
    /// as it came instead of computing its MAC again (`PullRoute.idle`).
    static func read(_ text: String, partition: String, key: [UInt8]) -> (cursor: Cursor, canonical: Bool)? {
        guard text.hasPrefix("c:"), text.utf8.count < 600, let bytes = Crypto.base64Decode(text.dropFirst(2)),
              bytes.count >= 1 + 8 + 1 + macLength
        else { return nil }
        guard let cursor = read(bytes, partition: partition, key: key) else { return nil }
        return (cursor, bytes[0] == version && text.utf8.dropFirst(2).elementsEqual(Crypto.base64url(bytes).utf8))
    }

    private static func read(_ bytes: [UInt8], partition: String, key: [UInt8]) -> Cursor? {
        let payload = Array(bytes.dropLast(macLength))
        guard Crypto.constantTimeEqual(Array(bytes.suffix(macLength)), mac(payload, partition: partition, key: key)),
              payload[0] == 1 || payload[0] == version
        else { return nil }
        func int64(at start: Int) -> Int64 {
            payload[start..<(start + 8)].reduce(Int64(0)) { $0 << 8 | Int64($1) }
        }
        let seq = int64(at: 1)
        var horizon: Int64 = 0
        var at = 9
        if payload[0] == version {
            guard payload.count >= 18 else { return nil }
            horizon = int64(at: 9)
            at = 17
        }
        let collectionLength = Int(payload[at])
        guard payload.count >= at + 1 + collectionLength, seq >= 0, horizon >= 0 else { return nil }
        let collection = String(decoding: payload[(at + 1)..<(at + 1 + collectionLength)], as: UTF8.self)
        let id = String(decoding: payload[(at + 1 + collectionLength)...], as: UTF8.self)
        return Cursor(seq: seq, collection: collection, id: id, horizon: horizon)
    }

    static func mac(_ payload: [UInt8], partition: String, key: [UInt8]) -> [UInt8] {
        Array(Crypto.hmacSHA256(key: key, Array(partition.utf8) + [0] + payload).prefix(macLength))
    }
}
