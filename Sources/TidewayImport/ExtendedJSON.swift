import Accounts
import Administration
import Database
import Foundation
import Mail
import Schema
import Support
import Sync
import TidewayJSON
import Web

/// Reads `mongoexport` output: MongoDB Extended JSON v2
/// (https://www.mongodb.com/docs/manual/reference/mongodb-extended-json/), canonical or
/// relaxed, one document a line (JSON Lines, the default) or one JSON array (`--jsonArray`).
/// The v1 forms mongoexport wrote before 4.2 (`$date` as a number, `$binary` with `$type`)
/// are read too.
package enum ExtendedJSONReader {
    /// Strings up to this many bytes (a photo's base64 picture is long).
    static let limits = JSONLimits(maxDepth: 100, maxStringBytes: 64 * 1024 * 1024)

    package static func documents(in bytes: [UInt8]) -> BSONReader.Output {
        var output = BSONReader.Output()
        forEach(in: bytes) { index, _, result in output.keep(index, result) }
        return output
    }

    /// The documents one at a time, with the byte offset each ends at.
    package static func forEach(in bytes: [UInt8], _ body: (Int, Int, Result<BSONValue, ReadError>) throws -> Void) rethrows {
        let firstByte = bytes.first { !($0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09) }
        if firstByte == UInt8(ascii: "[") {
            let parsed: JSON
            do {
                parsed = try JSON(parsing: bytes, limits: limits)
            } catch {
                try body(0, bytes.count, .failure(ReadError(document: 0, location: "byte \(error.offset)", message: "not JSON: \(error.message)")))
                return
            }
            let items = parsed.arrayValue ?? []
            for (index, item) in items.enumerated() {
                let end = bytes.count * (index + 1) / max(items.count, 1)
                let result: Result<BSONValue, ReadError>
                do {
                    result = .success(try document(item))
                } catch {
                    result = .failure(ReadError(document: index, location: "array element \(index)", message: error.message))
                }
                try body(index, end, result)
            }
            return
        }
        var index = 0
        var line = 0
        var start = 0
        while start < bytes.count {
            let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
            line += 1
            let slice = bytes[start..<end]
            start = end + 1
            guard slice.contains(where: { !($0 == 0x20 || $0 == 0x0D || $0 == 0x09) }) else { continue }
            let result: Result<BSONValue, ReadError>
            switch Result(catching: { () throws(JSONParseError) in try JSON(parsing: slice, limits: limits) }) {
            case .failure(let error):
                result = .failure(ReadError(document: index, location: "line \(line)", message: "not JSON: \(error.message)"))
            case .success(let parsed):
                do {
                    result = .success(try document(parsed))
                } catch {
                    result = .failure(ReadError(document: index, location: "line \(line)", message: error.message))
                }
            }
            try body(index, min(end + 1, bytes.count), result)
            index += 1
        }
    }

    struct Failure: Error {
        let message: String
    }

    /// One top-level value, which must be a document.
    static func document(_ json: JSON) throws(Failure) -> BSONValue {
        guard case .object = json else { throw Failure(message: "a document must be a JSON object, not \(json.typeName)") }
        return try value(json, path: "")
    }

    /// One Extended JSON value at `path` (a JSON Pointer, for messages).
    static func value(_ json: JSON, path: String) throws(Failure) -> BSONValue {
        switch json {
        case .null: return .null
        case .bool(let flag): return .bool(flag)
        case .int(let number): return Int32(exactly: number).map(BSONValue.int32) ?? .int64(number)
        case .double(let number): return .double(number)
        case .string(let text): return .string(text)
        case .array(let items):
            var out: [BSONValue] = []
            out.reserveCapacity(items.count)
            for (i, item) in items.enumerated() { out.append(try value(item, path: path + "/\(i)")) }
            return .array(out)
        case .object(let fields):
            if let wrapped = try wrapper(fields, path: path) { return wrapped }
            var out: [String: BSONValue] = [:]
            for (key, item) in fields { out[key] = try value(item, path: path + "/" + JSONPointerText.escape(key)) }
            return .document(out)
        }
    }

    /// `{"$oid": …}` and the other type wrappers; nil for an ordinary object.
    static func wrapper(_ fields: JSONObject, path: String) throws(Failure) -> BSONValue? {
        guard let first = fields.keys.first(where: { $0.hasPrefix("$") }) else { return nil }
        let key = fields["$binary"] != nil ? "$binary" : first  // v1 binary: {"$binary", "$type"}
        func bad(_ why: String) -> Failure { Failure(message: "\(path.isEmpty ? "/" : path): \(why)") }
        func only(_ keys: Set<String>) throws(Failure) {
            guard Set(fields.keys) == keys else { throw bad("\(key) must stand alone in its object") }
        }
        switch key {
        case "$oid":
            try only(["$oid"])
            guard let hex = fields["$oid"]?.stringValue, hex.utf8.count == 24, hex.utf8.allSatisfy(\.isHexDigit) else {
                throw bad("$oid must be 24 hex digits")
            }
            return .objectID(hex.lowercased())
        case "$numberInt":
            try only(["$numberInt"])
            guard let text = fields[key]?.stringValue, let number = Int32(text) else { throw bad("$numberInt must be a 32-bit integer string") }
            return .int32(number)
        case "$numberLong":
            try only(["$numberLong"])
            guard let text = fields[key]?.stringValue, let number = Int64(text) else { throw bad("$numberLong must be a 64-bit integer string") }
            return .int64(number)
        case "$numberDouble":
            try only(["$numberDouble"])
            guard let text = fields[key]?.stringValue else { throw bad("$numberDouble must be a string") }
            switch text {
            case "Infinity": return .double(.infinity)
            case "-Infinity": return .double(-.infinity)
            case "NaN": return .double(.nan)
            default:
                guard let number = Double(text) else { throw bad("$numberDouble '\(text)' is not a number") }
                return .double(number)
            }
        case "$numberDecimal":
            try only(["$numberDecimal"])
            guard let text = fields[key]?.stringValue, !text.isEmpty else { throw bad("$numberDecimal must be a string") }
            return .decimal128(text)
        case "$date":
            try only(["$date"])
            switch fields[key] {
            case .string(let text)?:
                guard let millis = ISODate.millis(text) else { throw bad("$date '\(text)' is not an ISO 8601 date") }
                return .date(millis)
            case .object(let inner)?:
                guard inner.count == 1, let text = inner["$numberLong"]?.stringValue, let millis = Int64(text) else {
                    throw bad("$date must hold {\"$numberLong\": \"<milliseconds>\"}")
                }
                return .date(millis)
            case .int(let millis)?:
                return .date(millis)
            case .double(let millis)? where millis.rounded() == millis && abs(millis) < 9.2e18:
                return .date(Int64(millis))
            default:
                throw bad("$date must be an ISO 8601 string or {\"$numberLong\": …}")
            }
        case "$binary":
            let base64: String?
            let subtype: String?
            if case .object(let inner)? = fields["$binary"] {
                try only(["$binary"])
                base64 = inner["base64"]?.stringValue
                subtype = inner["subType"]?.stringValue
            } else {
                try only(["$binary", "$type"])  // v1
                base64 = fields["$binary"]?.stringValue
                subtype = fields["$type"]?.stringValue
            }
            guard let base64, let subtype, let type = UInt8(subtype, radix: 16), let bytes = Data(base64Encoded: base64) else {
                throw bad("$binary must hold base64 and a hex subType")
            }
            return .binary(subtype: type, bytes: Array(bytes))
        case "$uuid":
            try only(["$uuid"])
            guard let text = fields[key]?.stringValue, let uuid = UUID(uuidString: text) else { throw bad("$uuid must be a UUID") }
            return .binary(subtype: 4, bytes: withUnsafeBytes(of: uuid.uuid) { Array($0) })
        case "$timestamp":
            try only(["$timestamp"])
            guard let t = fields[key]?["t"]?.intValue, let i = fields[key]?["i"]?.intValue,
                  let seconds = UInt32(exactly: t), let increment = UInt32(exactly: i) else {
                throw bad("$timestamp must hold t and i")
            }
            return .timestamp(seconds: seconds, increment: increment)
        default:
            throw bad("\(key) values are not read (Realm apps do not write them)")
        }
    }
}

extension UInt8 {
    var isHexDigit: Bool { (48...57).contains(self) || (65...70).contains(self) || (97...102).contains(self) }
}

/// JSON Pointer (RFC 6901) reference tokens.
enum JSONPointerText {
    static func escape(_ key: String) -> String {
        key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }
}

/// ISO 8601 dates both ways, in milliseconds since the epoch (UTC).
package enum ISODate {
    /// `YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM|±HHMM)`; nil otherwise.
    package static func millis(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        var p = 0
        func num(_ n: Int) -> Int? {
            guard b.count - p >= n else { return nil }
            var v = 0
            for _ in 0..<n {
                guard b[p] >= 48 && b[p] <= 57 else { return nil }
                v = v * 10 + Int(b[p] - 48)
                p += 1
            }
            return v
        }
        func lit(_ c: UInt8) -> Bool {
            guard p < b.count, b[p] == c else { return false }
            p += 1
            return true
        }
        guard let year = num(4), lit(45), let month = num(2), lit(45), let day = num(2), lit(84) || lit(32),
              let hour = num(2), lit(58), let minute = num(2), (1...12).contains(month), (1...31).contains(day),
              hour <= 23, minute <= 59 else { return nil }
        var second = 0
        var millis = 0
        if lit(58) {
            guard let s = num(2), s <= 60 else { return nil }
            second = s
            if lit(46) {
                var scale = 100
                let start = p
                while p < b.count, b[p] >= 48, b[p] <= 57 {
                    millis += Int(b[p] - 48) * scale
                    scale /= 10
                    p += 1
                }
                guard p > start else { return nil }
            }
        }
        var offset = 0
        if lit(90) {
        } else if p < b.count, b[p] == 43 || b[p] == 45 {
            let sign = b[p] == 45 ? -1 : 1
            p += 1
            guard let h = num(2) else { return nil }
            _ = lit(58)
            guard let m = num(2) else { return nil }
            offset = sign * (h * 60 + m) * 60
        } else {
            return nil
        }
        guard p == b.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = Int64(days) * 86400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offset)
        return seconds * 1000 + Int64(millis)
    }

    /// `YYYY-MM-DDTHH:MM:SS.sssZ`, what JavaScript's `toISOString()` writes.
    package static func string(millis: Int64) -> String {
        let (secondsTotal, ms) = millis.quotientAndRemainder(dividingBy: 1000)
        var seconds = secondsTotal
        var milli = ms
        if milli < 0 {
            milli += 1000
            seconds -= 1
        }
        var days = seconds / 86400
        var rest = seconds % 86400
        if rest < 0 {
            rest += 86400
            days -= 1
        }
        let (year, month, day) = civilFromDays(days)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(rest / 3600, 2)):\(pad(rest % 3600 / 60, 2)):\(pad(rest % 60, 2)).\(pad(milli, 3))Z"
    }

    // Howard Hinnant's days_from_civil / civil_from_days.
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    static func civilFromDays(_ days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
