/// Why a JSON text was refused. `kind` is for programs (a body that is too deep or has a huge
/// string may deserve a different answer than a typo); `message` is for people and names the byte
/// offset, so that a client developer can find the spot in what they sent.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Not RFC 8259 JSON: bad token, trailing comma, lone surrogate, duplicate key, invalid UTF-8 ...
        case syntax
        /// More nested arrays/objects than `JSONLimits.maxDepth`.
        case tooDeep
        /// A string (or object key) longer than `JSONLimits.maxStringBytes` once decoded.
        case stringTooLong
    }

    public let kind: Kind
    /// Byte offset into the input where the problem was found.
    public let offset: Int
    /// "unexpected character ',' at byte 17".
    public let message: String

    public init(_ kind: Kind, _ problem: String, at offset: Int) {
        self.kind = kind
        self.offset = offset
        self.message = "\(problem) at byte \(offset)"
    }

    public var description: String { message }
}

/// Bounds that keep one request from eating the worker's stack or memory (sync-protocol.md, Limits).
public struct JSONLimits: Sendable, Equatable {
    /// Nested arrays and objects; 32 levels parse, 33 are refused. Scalars add no level.
    public var maxDepth: Int
    /// Decoded UTF-8 bytes of one string or object key.
    public var maxStringBytes: Int
    /// PostgreSQL `jsonb` cannot store U+0000 ("unsupported Unicode escape sequence"): refusing
    /// `\u0000` here turns what would be a 500 at insert time into a 400 for the client.
    public var allowsNullCharacter: Bool

    public init(maxDepth: Int = 32, maxStringBytes: Int = 256 * 1024, allowsNullCharacter: Bool = false) {
        self.maxDepth = maxDepth
        self.maxStringBytes = maxStringBytes
        self.allowsNullCharacter = allowsNullCharacter
    }
}
