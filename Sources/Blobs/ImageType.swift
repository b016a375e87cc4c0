/// The photo formats the blob store accepts, told apart by their first bytes: the declared
/// Content-Type must agree with what the bytes are.
public enum ImageType: String, Sendable, CaseIterable {
    case jpeg = "image/jpeg"
    case png = "image/png"
    case webp = "image/webp"

    public var contentType: String { rawValue }

    /// From a Content-Type header value (parameters and case ignored); nil for anything else.
    public init?(contentType: String) {
        let media = contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard let media, let type = ImageType(rawValue: media) else { return nil }
        self = type
    }

    /// Bytes needed to recognize every format.
    public static let sniffLength = 12

    /// What the leading bytes are, or nil when none of the accepted formats.
    public static func sniff(_ head: some Collection<UInt8>) -> ImageType? {
        let bytes = Array(head.prefix(sniffLength))
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        // RIFF <4-byte size> WEBP
        if bytes.count >= 12, bytes[0..<4].elementsEqual(Array("RIFF".utf8)), bytes[8..<12].elementsEqual(Array("WEBP".utf8)) {
            return .webp
        }
        return nil
    }
}
