/// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, the RFC 3339 profile of ISO 8601 that JavaScript's
/// `toISOString()`, Swift's `ISO8601DateFormatter` and Java's `Instant` write. Checked by hand,
/// field by field, because it runs on every date of every write.
package enum DateFormat {
    package static func isZonedDateTime(_ text: String) -> Bool {
        var text = text
        // On the string's own bytes, not a copy into an Array per date (every write has several).
        return text.withUTF8 { isZonedDateTime(bytes: $0) }
    }

    private static func isZonedDateTime(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var position = 0

        func number(_ digits: Int) -> Int? {
            guard bytes.count - position >= digits else { return nil }
            var value = 0
            for _ in 0..<digits {
                let byte = bytes[position]
                guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
                position += 1
            }
            return value
        }
        func literal(_ character: Unicode.Scalar) -> Bool {
            guard position < bytes.count, bytes[position] == UInt8(ascii: character) else { return false }
            position += 1
            return true
        }

        guard let year = number(4), literal("-"), let month = number(2), literal("-"), let day = number(2),
            literal("T"), let hour = number(2), literal(":"), let minute = number(2), literal(":"), let second = number(2),
            (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
            hour <= 23, minute <= 59, second <= 59
        else { return false }

        if literal(".") {
            let fractionStart = position
            while position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "9") { position += 1 }
            guard position > fractionStart else { return false }
        }

        if literal("Z") { return position == bytes.count }
        guard literal("+") || literal("-"), let zoneHours = number(2), literal(":"), let zoneMinutes = number(2),
            zoneHours <= 23, zoneMinutes <= 59
        else { return false }
        return position == bytes.count
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}

/// Standard base64 (RFC 4648 §4) with padding and no line breaks, as stored for thumbnails.
enum Base64Format {
    /// The number of bytes the text decodes to, or nil when it is not valid base64.
    static func decodedByteCount(_ text: String) -> Int? {
        let utf8 = text.utf8
        guard utf8.count % 4 == 0 else { return nil }
        var padding = 0
        for byte in utf8 {
            if byte == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            // Nothing but padding may follow padding.
            guard padding == 0, isAlphabet(byte) else { return nil }
        }
        guard padding <= 2 else { return nil }
        return utf8.count / 4 * 3 - padding
    }

    private static func isAlphabet(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "+"), UInt8(ascii: "/"):
            return true
        default:
            return false
        }
    }
}
