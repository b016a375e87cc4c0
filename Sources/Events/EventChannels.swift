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

    /// A stream's own channel, never published to: "r" + 32 random hex digits, so that no two
    /// streams have the same set of channels. nchan 1.3.6 keeps the streams of one set
    /// together, and the second reconnect to one set with a Last-Event-ID it did not hold
    /// killed the nginx worker (docs/performance/round-17.md, "nchan's crash on a
    /// Last-Event-ID it does not hold"). Named here, not by nginx's template, so that the
    /// list the worker redirects to is every channel of the stream (EventID counts its tags).
    public static func stream() -> String {
        "r" + Crypto.hex(Crypto.randomBytes(16))
    }
}
