import Foundation

/// One line per event on standard error (the supervisor or journald keeps it). Written
/// with `write(2)`: the C `stderr` global is not usable from Swift 6.
public enum Log {
    public static func info(_ message: String, requestID: String = "") { emit("info", message, requestID) }
    public static func warning(_ message: String, requestID: String = "") { emit("warning", message, requestID) }
    public static func error(_ message: String, requestID: String = "") { emit("error", message, requestID) }

    /// One line written as given, its newline included (a JSON object: the request log of
    /// `App.handle`, written from the bytes it was made in: no copy into a String and back).
    public static func line(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { buffer in
            _ = Foundation.write(2, buffer.baseAddress, buffer.count)
        }
    }

    private static func emit(_ level: String, _ message: String, _ requestID: String) {
        let stamp = Date().formatted(.iso8601)
        let rid = requestID.isEmpty ? "" : " request=\(requestID)"
        let line = "\(stamp) \(level)\(rid) \(message)\n"
        line.utf8CString.withUnsafeBufferPointer { buffer in
            _ = Foundation.write(2, buffer.baseAddress, buffer.count - 1)
        }
    }
}
