import Foundation

/// A small, strict JSON reader and writer for `JSONValue`: the client decodes and stores
/// thousands of documents per pull, and Codable's trial-and-error decoding of an untyped
/// value costs many times more than reading the bytes once.
enum JSONText {
    struct Failure: Error, CustomStringConvertible {
        var offset: Int
        var description: String { "invalid JSON at byte \(offset)" }
    }

    static func parse(_ data: Data) throws -> JSONValue {
        try data.withUnsafeBytes { raw in
            var reader = Reader(bytes: raw.bindMemory(to: UInt8.self))
            reader.skipSpace()
            let value = try reader.value(depth: 0)
            reader.skipSpace()
            guard reader.at == reader.bytes.count else { throw Failure(offset: reader.at) }
            return value
        }
    }

    struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var at = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func skipSpace() {
            while at < bytes.count, bytes[at] == 0x20 || bytes[at] == 0x0A || bytes[at] == 0x0D || bytes[at] == 0x09 { at += 1 }
        }

        func fail() -> Failure { Failure(offset: at) }

        mutating func expect(_ word: String) throws {
            for byte in word.utf8 {
                guard at < bytes.count, bytes[at] == byte else { throw fail() }
                at += 1
            }
        }

        mutating func value(depth: Int) throws -> JSONValue {
            guard at < bytes.count, depth < 512 else { throw fail() }
            switch bytes[at] {
            case UInt8(ascii: "{"):
                at += 1
                var fields: [String: JSONValue] = [:]
                skipSpace()
                if at < bytes.count, bytes[at] == UInt8(ascii: "}") { at += 1; return .object(fields) }
                while true {
                    skipSpace()
                    guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") else { throw fail() }
                    let key = try string()
                    skipSpace()
                    try expect(":")
                    skipSpace()
                    fields[key] = try value(depth: depth + 1)
                    skipSpace()
                    guard at < bytes.count else { throw fail() }
                    if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
                    if bytes[at] == UInt8(ascii: "}") { at += 1; return .object(fields) }
                    throw fail()
                }
            case UInt8(ascii: "["):
                at += 1
                var items: [JSONValue] = []
                skipSpace()
                if at < bytes.count, bytes[at] == UInt8(ascii: "]") { at += 1; return .array(items) }
                while true {
                    skipSpace()
                    items.append(try value(depth: depth + 1))
                    skipSpace()
                    guard at < bytes.count else { throw fail() }
                    if bytes[at] == UInt8(ascii: ",") { at += 1; continue }
                    if bytes[at] == UInt8(ascii: "]") { at += 1; return .array(items) }
                    throw fail()
                }
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try expect("true"); return .bool(true)
            case UInt8(ascii: "f"): try expect("false"); return .bool(false)
            case UInt8(ascii: "n"): try expect("null"); return .null
            default: return try number()
            }
        }

        mutating func number() throws -> JSONValue {
            let start = at
            var fraction = false
            if at < bytes.count, bytes[at] == UInt8(ascii: "-") { at += 1 }
            var digits = 0
            while at < bytes.count {
                let byte = bytes[at]
                if byte >= 0x30 && byte <= 0x39 {
                    digits += 1
                } else if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
                            || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") {
                    fraction = true
                } else {
                    break
                }
                at += 1
            }
            guard digits > 0 else { throw fail() }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
            if !fraction, let value = Int64(text) { return .int(value) }
            guard let value = Double(text), value.isFinite else { throw Failure(offset: start) }
            return .double(value)
        }

        mutating func hex4() throws -> UInt32 {
            guard at + 4 <= bytes.count else { throw fail() }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[at]
                let digit: UInt8
                switch byte {
                case 0x30...0x39: digit = byte - 0x30
                case 0x41...0x46: digit = byte - 0x41 + 10
                case 0x61...0x66: digit = byte - 0x61 + 10
                default: throw fail()
                }
                value = value << 4 | UInt32(digit)
                at += 1
            }
            return value
        }

        mutating func string() throws -> String {
            at += 1  // the opening quote
            let start = at
            // The common case: no escapes, one slice of UTF-8.
            while at < bytes.count, bytes[at] != UInt8(ascii: "\""), bytes[at] != UInt8(ascii: "\\") {
                guard bytes[at] >= 0x20 else { throw fail() }
                at += 1
            }
            guard at < bytes.count else { throw fail() }
            if bytes[at] == UInt8(ascii: "\"") {
                at += 1
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<(at - 1)]), as: UTF8.self)
            }
            var out = Array(bytes[start..<at])
            while true {
                guard at < bytes.count else { throw fail() }
                let byte = bytes[at]
                at += 1
                if byte == UInt8(ascii: "\"") { break }
                if byte < 0x20 { throw fail() }
                if byte != UInt8(ascii: "\\") { out.append(byte); continue }
                guard at < bytes.count else { throw fail() }
                let escape = bytes[at]
                at += 1
                switch escape {
                case UInt8(ascii: "\""): out.append(0x22)
                case UInt8(ascii: "\\"): out.append(0x5C)
                case UInt8(ascii: "/"): out.append(0x2F)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if scalar >= 0xD800 && scalar < 0xDC00 {
                        try expect("\\u")
                        let low = try hex4()
                        guard low >= 0xDC00 && low < 0xE000 else { throw fail() }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw fail() }
                    out.append(contentsOf: Array(String(Character(unicode)).utf8))
                default: throw fail()
                }
            }
            return String(decoding: out, as: UTF8.self)
        }
    }

    /// Compact JSON, object keys sorted (stable bytes).
    static func write(_ value: JSONValue) -> Data {
        var out = [UInt8]()
        out.reserveCapacity(256)
        write(value, into: &out)
        return Data(out)
    }

    static func write(_ value: JSONValue, into out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let flag): out.append(contentsOf: (flag ? "true" : "false").utf8)
        case .int(let number): out.append(contentsOf: String(number).utf8)
        case .double(let number):
            // Swift's shortest round-trip form ("2.5", "3.0", "1e-05"): valid JSON, and still a fraction when read back.
            out.append(contentsOf: "\(number)".utf8)
        case .string(let text): writeString(text, into: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                write(item, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let fields):
            out.append(UInt8(ascii: "{"))
            for (index, key) in fields.keys.sorted().enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                writeString(key, into: &out)
                out.append(UInt8(ascii: ":"))
                write(fields[key]!, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static let hexDigits = Array("0123456789abcdef".utf8)

    static func writeString(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case 0x22: out.append(contentsOf: [0x5C, 0x22])
            case 0x5C: out.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0..<0x20:
                out.append(contentsOf: Array("\\u00".utf8))
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
