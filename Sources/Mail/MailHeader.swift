import Foundation

/// Header values that people's text reaches (names, subjects): printable ASCII is quoted,
/// anything else becomes RFC 2047 encoded words, so a header is always one clean line.
enum MailHeader {
    static func isPlainASCII(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
    }

    /// A display name: a quoted string when plain ASCII, encoded words otherwise.
    static func phrase(_ text: String) -> String {
        guard isPlainASCII(text) else { return encodedWords(text) }
        return "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// Unstructured text (Subject): as is when plain ASCII, encoded words otherwise.
    static func text(_ text: String) -> String {
        let clean = MailAddress.cleanName(text)
        return isPlainASCII(clean) ? clean : encodedWords(clean)
    }

    /// `=?utf-8?B?...?=` words of at most 45 bytes of UTF-8 each (60 base64 characters,
    /// under the 75 an encoded word may have), split between characters, never inside one.
    static func encodedWords(_ text: String) -> String {
        var words: [String] = []
        var chunk: [UInt8] = []
        for character in text {
            let bytes = Array(String(character).utf8)
            if chunk.count + bytes.count > 45, !chunk.isEmpty {
                words.append("=?utf-8?B?" + Data(chunk).base64EncodedString() + "?=")
                chunk = []
            }
            chunk += bytes
        }
        if !chunk.isEmpty { words.append("=?utf-8?B?" + Data(chunk).base64EncodedString() + "?=") }
        return words.joined(separator: " ")
    }
}
