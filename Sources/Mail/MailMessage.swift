import Foundation
import Support

/// One plain-text mail, rendered with CRLF line ends and the headers a relay expects.
/// The body goes as 7bit when it is short-lined ASCII, as base64 otherwise; dot-stuffing
/// on the wire is libcurl's.
public struct MailMessage: Sendable, Equatable {
    public let from: MailAddress
    public let to: MailAddress
    public let subject: String
    public let body: String

    public init(from: MailAddress, to: MailAddress, subject: String, body: String) {
        self.from = from
        self.to = to
        self.subject = subject
        self.body = body
    }

    public func rendered(date: Date = Date(), messageID: String = MailMessage.newMessageID()) -> String {
        let domain = from.address.split(separator: "@").last.map(String.init) ?? "localhost"
        let lines = body.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
            .split(separator: "\n", omittingEmptySubsequences: false)
        let sevenBit = lines.allSatisfy { line in line.utf8.count <= 998 && line.utf8.allSatisfy { $0 < 0x80 && $0 != 0 } }
        var headers = [
            "From: " + from.header,
            "To: " + to.header,
            "Subject: " + MailHeader.text(subject),
            "Date: " + Self.dateText(date),
            "Message-ID: <" + messageID + "@" + domain + ">",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8",
        ]
        let text: String
        if sevenBit {
            headers.append("Content-Transfer-Encoding: 7bit")
            text = lines.joined(separator: "\r\n")
        } else {
            headers.append("Content-Transfer-Encoding: base64")
            let encoded = Data(lines.joined(separator: "\r\n").utf8).base64EncodedString()
            text = stride(from: 0, to: encoded.count, by: 76).map { start -> String in
                let from = encoded.index(encoded.startIndex, offsetBy: start)
                return String(encoded[from..<(encoded.index(from, offsetBy: 76, limitedBy: encoded.endIndex) ?? encoded.endIndex)])
            }.joined(separator: "\r\n")
        }
        return headers.joined(separator: "\r\n") + "\r\n\r\n" + text + "\r\n"
    }

    public static func newMessageID() -> String {
        "tideway." + Crypto.newToken().prefix(24)
    }

    /// RFC 5322 date in UTC, e.g. `Sun, 22 Nov 2026 02:55:00 +0000`.
    static func dateText(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        return formatter.string(from: date)
    }
}
