import Support

/// nchan channel ids: short, URL-safe, and never naming a partition in a URL.
public enum EventChannels {
    /// A partition's channel: "p" + 30 hex digits of its SHA-256.
    public static func partition(_ name: String) -> String {
        "p" + String(Crypto.hex(Crypto.sha256(name)).prefix(30))
    }

    /// A login's own channel, deleted to close that login's streams.
    public static func login(_ loginID: String) -> String {
        "l" + loginID.lowercased().filter { $0 != "-" }
    }
}
