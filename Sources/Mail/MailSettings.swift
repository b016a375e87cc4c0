import Foundation

/// The SMTP relay that mails account links, from TIDEWAY_SMTP_*. Without TIDEWAY_SMTP_HOST
/// there is none: admins hand links over themselves and `/forgot` logs its link for the
/// operator.
public struct MailSettings: Sendable {
    /// How the connection to the relay is protected.
    public enum Security: String, Sendable {
        /// Plain SMTP, for a relay on the same machine or private network (port 25).
        case none
        /// SMTP upgraded with STARTTLS, which must succeed (port 587, submission).
        case starttls
        /// TLS from the first byte (port 465, SMTPS).
        case tls

        var defaultPort: Int {
            switch self {
            case .none: 25
            case .starttls: 587
            case .tls: 465
            }
        }
    }

    public var host: String
    public var port: Int
    public var security: Security
    /// Credentials for AUTH; empty user: no authentication.
    public var user: String
    public var password: String
    public var from: MailAddress
    /// For the whole exchange with the relay, connection included.
    public var timeoutSeconds: Int
    /// A setting that cannot work; start-up refuses it rather than failing at the first mail.
    public var problem: String?

    /// nil when TIDEWAY_SMTP_HOST is unset or empty.
    public init?(environment: [String: String], publicURL: String) {
        guard let host = environment["TIDEWAY_SMTP_HOST"], !host.isEmpty else { return nil }
        self.host = host
        let securityText = (environment["TIDEWAY_SMTP_TLS"] ?? "").lowercased()
        security = securityText.isEmpty ? .starttls : Security(rawValue: securityText) ?? .starttls
        port = security.defaultPort
        user = environment["TIDEWAY_SMTP_USER"] ?? ""
        password = environment["TIDEWAY_SMTP_PASSWORD"] ?? ""
        timeoutSeconds = 10
        let siteHost = URL(string: publicURL)?.host ?? "localhost"
        from = MailAddress(address: "noreply@" + siteHost, name: "Tideway") ?? MailAddress(address: "noreply@localhost", name: "Tideway")!
        if !securityText.isEmpty && Security(rawValue: securityText) == nil {
            problem = "TIDEWAY_SMTP_TLS must be none, starttls or tls"
        }
        if let text = environment["TIDEWAY_SMTP_PORT"], !text.isEmpty {
            if let value = Int(text), (1...65535).contains(value) { port = value } else { problem = "TIDEWAY_SMTP_PORT must be a port number" }
        }
        if let text = environment["TIDEWAY_SMTP_TIMEOUT_SECONDS"], !text.isEmpty {
            if let value = Int(text), (1...300).contains(value) { timeoutSeconds = value } else { problem = "TIDEWAY_SMTP_TIMEOUT_SECONDS must be 1 to 300" }
        }
        if let text = environment["TIDEWAY_SMTP_FROM"], !text.isEmpty {
            if let parsed = MailAddress(parsing: text) { from = parsed } else { problem = "TIDEWAY_SMTP_FROM must be an address, or a name and <address>" }
        }
        if host.contains(where: { $0.isWhitespace || $0 == "/" || $0 == "@" }) {
            problem = "TIDEWAY_SMTP_HOST must be a host name or address"
        }
    }

    /// libcurl's URL of the relay: smtps:// for TLS from the start, smtp:// otherwise.
    var url: String {
        let bracketed = host.contains(":") ? "[\(host)]" : host
        return (security == .tls ? "smtps://" : "smtp://") + bracketed + ":\(port)"
    }
}
