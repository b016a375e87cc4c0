import Foundation
import Testing

@testable import Mail

@Suite struct MailAddressTests {
    @Test func acceptsPlainAddressesOnly() {
        #expect(MailAddress.isValid("ana@example.org"))
        #expect(MailAddress.isValid("ana.b+tag@sub.example.org"))
        for bad in ["", "ana", "ana@", "@example.org", "a@b@c", "ana @example.org", "ana@example.org\r\nBcc: x@y.z",
                    "ana\n@example.org", "a,b@example.org", "<ana@example.org>", "\"ana\"@example.org", "zoë@example.org",
                    "ana@.example.org", "ana@example.org."] {
            #expect(!MailAddress.isValid(bad), "\(bad)")
            #expect(MailAddress(address: bad) == nil)
        }
    }

    @Test func namesLoseControlCharactersAndAreQuotedOrEncoded() {
        let evil = MailAddress(address: "eve@example.org", name: "Eve\r\nBcc: x@y.z\u{2028}\t \"q\" \\")!
        #expect(evil.name == "Eve Bcc: x@y.z \"q\" \\")
        #expect(evil.header == #""Eve Bcc: x@y.z \"q\" \\" <eve@example.org>"#)
        #expect(MailAddress(address: "z@example.org", name: "Zoë")!.header == "=?utf-8?B?Wm/Dqw==?= <z@example.org>")
        #expect(MailAddress(address: "z@example.org")!.header == "z@example.org")
    }

    @Test func longNamesBecomeSeveralEncodedWords() {
        let name = String(repeating: "é", count: 40)
        let words = MailHeader.encodedWords(name).split(separator: " ")
        #expect(words.count == 2)
        #expect(words.allSatisfy { $0.count <= 75 && $0.hasPrefix("=?utf-8?B?") && $0.hasSuffix("?=") })
    }

    @Test func parsesTheFromSetting() {
        #expect(MailAddress(parsing: "Tideway <noreply@example.org>") == MailAddress(address: "noreply@example.org", name: "Tideway"))
        #expect(MailAddress(parsing: "\"Tide, way\" <noreply@example.org>")?.name == "Tide, way")
        #expect(MailAddress(parsing: " noreply@example.org ")?.address == "noreply@example.org")
        #expect(MailAddress(parsing: "Tideway <noreply@example.org>\r\nBcc: x@y.z") == nil)
    }
}

@Suite struct MailMessageTests {
    let from = MailAddress(address: "noreply@example.org", name: "Tideway")!
    let date = Date(timeIntervalSince1970: 1_795_000_000)

    @Test func rendersHeadersAndCRLF() {
        let to = MailAddress(address: "ana@example.org", name: "Ana")!
        let text = MailMessage(from: from, to: to, subject: "Hello\r\nBcc: x@y.z", body: "line one\nline two\r\n.dot\n")
            .rendered(date: date, messageID: "abc")
        let (head, body) = split(text)
        #expect(head == [
            "From: \"Tideway\" <noreply@example.org>",
            "To: \"Ana\" <ana@example.org>",
            "Subject: Hello Bcc: x@y.z",
            "Date: Wed, 18 Nov 2026 11:06:40 +0000",
            "Message-ID: <abc@example.org>",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: 7bit",
        ])
        #expect(body == "line one\r\nline two\r\n.dot\r\n\r\n")
        #expect(!text.replacingOccurrences(of: "\r\n", with: "").contains("\n"))
        #expect(!text.replacingOccurrences(of: "\r\n", with: "").contains("\r"))
    }

    @Test func nonASCIIBodiesGoAsBase64() {
        let to = MailAddress(address: "z@example.org", name: "Zoë")!
        let text = MailMessage(from: from, to: to, subject: "Olá", body: "Olá Zoë\n" + String(repeating: "x", count: 100))
            .rendered(date: date, messageID: "abc")
        let (head, body) = split(text)
        #expect(head.contains("Content-Transfer-Encoding: base64"))
        #expect(head.contains("Subject: =?utf-8?B?T2zDoQ==?="))
        let lines = body.split(separator: "\r\n")
        #expect(lines.allSatisfy { $0.count <= 76 })
        let decoded = Data(base64Encoded: lines.joined()).map { String(decoding: $0, as: UTF8.self) }
        #expect(decoded == "Olá Zoë\r\n" + String(repeating: "x", count: 100))
    }

    func split(_ text: String) -> ([String], String) {
        let parts = text.components(separatedBy: "\r\n\r\n")
        return (parts[0].components(separatedBy: "\r\n"), parts.dropFirst().joined(separator: "\r\n\r\n"))
    }
}

@Suite struct MailSettingsTests {
    @Test func noHostNoMail() {
        #expect(MailSettings(environment: [:], publicURL: "https://t.example.org") == nil)
        #expect(MailSettings(environment: ["TIDEWAY_SMTP_HOST": ""], publicURL: "https://t.example.org") == nil)
    }

    @Test func defaultsFollowTheSecurity() {
        let starttls = MailSettings(environment: ["TIDEWAY_SMTP_HOST": "relay.example.org"], publicURL: "https://t.example.org")!
        #expect(starttls.security == .starttls && starttls.port == 587 && starttls.problem == nil)
        #expect(starttls.url == "smtp://relay.example.org:587")
        #expect(starttls.from == MailAddress(address: "noreply@t.example.org", name: "Tideway"))
        let plain = MailSettings(environment: ["TIDEWAY_SMTP_HOST": "localhost", "TIDEWAY_SMTP_TLS": "none"], publicURL: "")!
        #expect(plain.port == 25 && plain.url == "smtp://localhost:25")
        let tls = MailSettings(environment: ["TIDEWAY_SMTP_HOST": "::1", "TIDEWAY_SMTP_TLS": "TLS", "TIDEWAY_SMTP_PORT": "2465"], publicURL: "")!
        #expect(tls.url == "smtps://[::1]:2465")
    }

    @Test func badSettingsAreProblems() {
        for environment in [["TIDEWAY_SMTP_TLS": "ssl"], ["TIDEWAY_SMTP_PORT": "70000"], ["TIDEWAY_SMTP_FROM": "not an address"],
                            ["TIDEWAY_SMTP_TIMEOUT_SECONDS": "0"]] {
            let settings = MailSettings(environment: environment.merging(["TIDEWAY_SMTP_HOST": "relay"]) { a, _ in a }, publicURL: "")
            #expect(settings?.problem != nil, "\(environment)")
        }
    }
}
