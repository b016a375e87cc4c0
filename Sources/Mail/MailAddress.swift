import Foundation

/// A mailbox for a header: an address checked to be a plain ASCII addr-spec, and a display
/// name with every control character removed. Nothing a person typed can end a header
/// line or add a recipient: CR, LF and the characters that separate addresses never pass.
public struct MailAddress: Sendable, Equatable {
    public let address: String
    public let name: String

    /// nil when `address` is not one we can put in a header and an SMTP envelope.
    public init?(address: String, name: String = "") {
        guard Self.isValid(address) else { return nil }
        self.address = address
        self.name = Self.cleanName(name)
    }

    /// `Name <a@b.c>`, `"Name" <a@b.c>` or a bare `a@b.c` (for TIDEWAY_SMTP_FROM).
    public init?(parsing text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasSuffix(">"), let open = trimmed.lastIndex(of: "<") {
            let address = String(trimmed[trimmed.index(after: open)..<trimmed.index(before: trimmed.endIndex)])
            var name = trimmed[..<open].trimmingCharacters(in: .whitespaces)
            if name.count >= 2, name.hasPrefix("\""), name.hasSuffix("\"") { name = String(name.dropFirst().dropLast()) }
            self.init(address: address, name: name)
        } else {
            self.init(address: trimmed)
        }
    }

    /// One `@`, both sides non-empty, at most 254 bytes, printable ASCII without spaces or
    /// the characters that quote, group or separate addresses.
    public static func isValid(_ address: String) -> Bool {
        let bytes = Array(address.utf8)
        guard (3...254).contains(bytes.count) else { return false }
        let forbidden = Set("<>()[]\\,;:\"".utf8)
        guard bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F && !forbidden.contains($0) }) else { return false }
        let parts = address.split(separator: "@", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && !parts[1].isEmpty && !parts[1].hasPrefix(".") && !parts[1].hasSuffix(".")
    }

    /// Control characters (CR and LF among them) and line or paragraph separators go; runs
    /// of white space become one space; at most 100 characters.
    static func cleanName(_ name: String) -> String {
        let kept = name.unicodeScalars.map { scalar -> Character in
            scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .lineSeparator
                || scalar.properties.generalCategory == .paragraphSeparator || scalar.properties.generalCategory == .format
                ? " " : Character(scalar)
        }
        return String(kept).split(whereSeparator: \.isWhitespace).joined(separator: " ").prefix(100).description
    }

    /// The header form: the address alone, or the name quoted (ASCII) or encoded (RFC 2047).
    public var header: String {
        if name.isEmpty { return address }
        return MailHeader.phrase(name) + " <" + address + ">"
    }
}
