

/// A value of a MongoDB document, as `mongodump` (BSON, https://bsonspec.org/spec.html) or
/// `mongoexport` (Extended JSON v2) hands it out. Only the types Realm apps write are
/// read; the others (regular expressions, JavaScript, min/max keys, DBPointer) are
/// refused with their type byte named.
package indirect enum BSONValue: Sendable, Equatable {
    case double(Double)
    case string(String)
    /// Key order is not kept: Tideway's documents are JSON objects (unordered).
    case document([String: BSONValue])
    case array([BSONValue])
    case binary(subtype: UInt8, bytes: [UInt8])
    /// 24 lower-case hex digits.
    case objectID(String)
    case bool(Bool)
    /// Milliseconds since the Unix epoch, UTC.
    case date(Int64)
    case null
    case int32(Int32)
    case timestamp(seconds: UInt32, increment: UInt32)
    case int64(Int64)
    /// The decimal's canonical string (the Extended JSON `$numberDecimal` form).
    case decimal128(String)

    package subscript(key: String) -> BSONValue? {
        if case .document(let fields) = self { return fields[key] }
        return nil
    }

    /// The type's name as BSON's specification calls it, for messages.
    package var typeName: String {
        switch self {
        case .double: "double"
        case .string: "string"
        case .document: "document"
        case .array: "array"
        case .binary: "binData"
        case .objectID: "objectId"
        case .bool: "bool"
        case .date: "date"
        case .null: "null"
        case .int32: "int"
        case .timestamp: "timestamp"
        case .int64: "long"
        case .decimal128: "decimal"
        }
    }
}

/// What went wrong reading a file of documents: which document (0-based, in file order)
/// and where (byte offset, or line for JSON Lines).
package struct ReadError: Error, Sendable, Equatable, CustomStringConvertible {
    package let document: Int
    package let location: String
    package let message: String

    package var description: String { "document #\(document + 1) (\(location)): \(message)" }
}

/// Reads a `.bson` file: documents one after another, each prefixed with its int32 length.
/// A document whose own bytes are broken is refused alone (its length still says where the
/// next one starts); a truncated file ends the reading, with the documents before it kept.
package enum BSONReader {
    package struct Output: Sendable {
        package var documents: [(index: Int, value: BSONValue)] = []
        package var errors: [ReadError] = []

        /// One result of a reader's forEach: the document, or why it could not be read.
        mutating func keep(_ index: Int, _ result: Result<BSONValue, ReadError>) {
            switch result {
            case .success(let value): documents.append((index, value))
            case .failure(let error): errors.append(error)
            }
        }
    }

    package static func documents(in bytes: [UInt8]) -> Output {
        var output = Output()
        forEach(in: bytes) { index, _, result in output.keep(index, result) }
        return output
    }

    /// The documents one at a time (a dump of 100,000 reports is not held whole), with the
    /// byte offset each ends at.
    package static func forEach(in bytes: [UInt8], _ body: (Int, Int, Result<BSONValue, ReadError>) throws -> Void) rethrows {
        var offset = 0
        var index = 0
        while offset < bytes.count {
            guard bytes.count - offset >= 5 else {
                try body(index, bytes.count, .failure(ReadError(document: index, location: "byte \(offset)",
                                               message: "truncated: \(bytes.count - offset) bytes left, too few for a document")))
                break
            }
            let length = Int(readInt32(bytes, offset))
            guard length >= 5 else {
                try body(index, bytes.count, .failure(ReadError(document: index, location: "byte \(offset)",
                                                                message: "invalid document length \(length)")))
                break
            }
            guard offset + length <= bytes.count else {
                try body(index, bytes.count, .failure(ReadError(
                    document: index, location: "byte \(offset)",
                    message: "truncated: the document says \(length) bytes, the file has \(bytes.count - offset) left")))
                break
            }
            let parser = Parser(bytes: bytes)
            let result: Result<BSONValue, ReadError>
            do {
                result = .success(try parser.document(at: offset, end: offset + length))
            } catch {
                result = .failure(ReadError(document: index, location: "byte \(error.offset)", message: error.message))
            }
            offset += length
            try body(index, offset, result)
            index += 1
        }
    }

    /// One document's bytes (tests, and a caller that has exactly one).
    package static func document(_ bytes: [UInt8]) throws(ReadError) -> BSONValue {
        let output = documents(in: bytes)
        if let error = output.errors.first { throw error }
        guard output.documents.count == 1, let first = output.documents.first else {
            throw ReadError(document: 0, location: "byte 0", message: "expected exactly one document")
        }
        return first.value
    }

    static func readInt32(_ bytes: [UInt8], _ at: Int) -> Int32 {
        Int32(bitPattern: UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24)
    }

    static func readUInt64(_ bytes: [UInt8], _ at: Int) -> UInt64 {
        var value: UInt64 = 0
        for i in 0..<8 { value |= UInt64(bytes[at + i]) << (8 * UInt64(i)) }
        return value
    }

    struct Failure: Error {
        let offset: Int
        let message: String
    }

    struct Parser {
        let bytes: [UInt8]
        /// Nesting limit: a hostile file must not overflow the stack.
        static let maxDepth = 100

        func document(at start: Int, end: Int, depth: Int = 0) throws(Failure) -> BSONValue {
            .document(try fields(at: start, end: end, depth: depth).reduce(into: [:]) { $0[$1.0] = $1.1 })
        }

        func array(at start: Int, end: Int, depth: Int) throws(Failure) -> BSONValue {
            .array(try fields(at: start, end: end, depth: depth).map(\.1))
        }

        /// The elements between a document's length and its terminating zero.
        func fields(at start: Int, end: Int, depth: Int) throws(Failure) -> [(String, BSONValue)] {
            guard depth <= Self.maxDepth else { throw Failure(offset: start, message: "nested deeper than \(Self.maxDepth) levels") }
            guard end - start >= 5, bytes[end - 1] == 0 else {
                throw Failure(offset: start, message: "a document must end with a zero byte")
            }
            var out: [(String, BSONValue)] = []
            var position = start + 4
            while position < end - 1 {
                let type = bytes[position]
                position += 1
                let name = try cString(at: &position, end: end - 1)
                let value = try element(type: type, at: &position, end: end - 1, depth: depth, name: name)
                out.append((name, value))
            }
            guard position == end - 1 else { throw Failure(offset: position, message: "an element runs past its document's end") }
            return out
        }

        func need(_ count: Int, at position: Int, end: Int, _ what: String) throws(Failure) {
            guard count >= 0, end - position >= count else {
                throw Failure(offset: position, message: "\(what) runs past its document's end")
            }
        }

        func cString(at position: inout Int, end: Int) throws(Failure) -> String {
            let start = position
            while position < end, bytes[position] != 0 { position += 1 }
            guard position < end else { throw Failure(offset: start, message: "a field name without its terminating zero") }
            let text = try utf8(start, position)
            position += 1
            return text
        }

        func utf8(_ from: Int, _ to: Int) throws(Failure) -> String {
            guard let text = String(validating: bytes[from..<to], as: UTF8.self) else {
                throw Failure(offset: from, message: "a string that is not valid UTF-8")
            }
            return text
        }

        func element(type: UInt8, at position: inout Int, end: Int, depth: Int, name: String) throws(Failure) -> BSONValue {
            let start = position
            switch type {
            case 0x01:
                try need(8, at: position, end: end, "double '\(name)'")
                defer { position += 8 }
                return .double(Double(bitPattern: readUInt64(bytes, position)))
            case 0x02:
                try need(4, at: position, end: end, "string '\(name)'")
                let length = Int(readInt32(bytes, position))
                try need(length, at: position + 4, end: end, "string '\(name)'")
                guard length >= 1, bytes[position + 4 + length - 1] == 0 else {
                    throw Failure(offset: start, message: "string '\(name)' without its terminating zero")
                }
                let text = try utf8(position + 4, position + 4 + length - 1)
                position += 4 + length
                return .string(text)
            case 0x03, 0x04:
                try need(4, at: position, end: end, "\(type == 3 ? "document" : "array") '\(name)'")
                let length = Int(readInt32(bytes, position))
                try need(length, at: position, end: end, "\(type == 3 ? "document" : "array") '\(name)'")
                guard length >= 5 else { throw Failure(offset: start, message: "invalid length \(length) of '\(name)'") }
                defer { position += length }
                return type == 0x03
                    ? try document(at: position, end: position + length, depth: depth + 1)
                    : try array(at: position, end: position + length, depth: depth + 1)
            case 0x05:
                try need(5, at: position, end: end, "binData '\(name)'")
                var length = Int(readInt32(bytes, position))
                let subtype = bytes[position + 4]
                try need(length, at: position + 5, end: end, "binData '\(name)'")
                var from = position + 5
                if subtype == 0x02 {  // the old binary subtype repeats the length inside
                    guard length >= 4 else { throw Failure(offset: start, message: "binData '\(name)' (subtype 2) too short") }
                    length -= 4
                    from += 4
                }
                position = from + length
                return .binary(subtype: subtype, bytes: Array(bytes[from..<from + length]))
            case 0x07:
                try need(12, at: position, end: end, "objectId '\(name)'")
                defer { position += 12 }
                return .objectID(hex(bytes[position..<position + 12]))
            case 0x08:
                try need(1, at: position, end: end, "bool '\(name)'")
                defer { position += 1 }
                switch bytes[position] {
                case 0: return .bool(false)
                case 1: return .bool(true)
                default: throw Failure(offset: start, message: "bool '\(name)' is neither 0 nor 1")
                }
            case 0x09:
                try need(8, at: position, end: end, "date '\(name)'")
                defer { position += 8 }
                return .date(Int64(bitPattern: readUInt64(bytes, position)))
            case 0x0A:
                return .null
            case 0x10:
                try need(4, at: position, end: end, "int '\(name)'")
                defer { position += 4 }
                return .int32(readInt32(bytes, position))
            case 0x11:
                try need(8, at: position, end: end, "timestamp '\(name)'")
                defer { position += 8 }
                let raw = readUInt64(bytes, position)
                return .timestamp(seconds: UInt32(raw >> 32), increment: UInt32(truncatingIfNeeded: raw))
            case 0x12:
                try need(8, at: position, end: end, "long '\(name)'")
                defer { position += 8 }
                return .int64(Int64(bitPattern: readUInt64(bytes, position)))
            case 0x13:
                try need(16, at: position, end: end, "decimal '\(name)'")
                defer { position += 16 }
                return .decimal128(Decimal128.string(low: readUInt64(bytes, position), high: readUInt64(bytes, position + 8)))
            default:
                throw Failure(offset: start - 1 - name.utf8.count - 1,
                              message: "field '\(name)' has BSON type 0x\(String(type, radix: 16)), which Realm apps do not write")
            }
        }
    }

    static func hex(_ bytes: some Collection<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// IEEE 754-2008 decimal128 (BID encoding) to the string the BSON specification's
/// Decimal128 document gives (the same as Extended JSON's `$numberDecimal`).
package enum Decimal128 {
    package static func string(low: UInt64, high: UInt64) -> String {
        let negative = high >> 63 == 1
        let combination = (high >> 58) & 0x1F
        if combination == 0x1F { return "NaN" }
        if combination == 0x1E { return negative ? "-Infinity" : "Infinity" }
        var exponent: Int
        var coefficient: UInt128
        if (high >> 61) & 3 == 3 {
            // The coefficient would be above 10^34 - 1: not canonical, read as zero.
            exponent = Int((high >> 47) & 0x3FFF)
            coefficient = 0
        } else {
            exponent = Int((high >> 49) & 0x3FFF)
            coefficient = UInt128(high & 0x1_FFFF_FFFF_FFFF) << 64 | UInt128(low)
            if coefficient > UInt128("9999999999999999999999999999999999")! { coefficient = 0 }
        }
        exponent -= 6176
        let digits = Array(String(coefficient))
        let adjusted = exponent + digits.count - 1
        var text: String
        if exponent <= 0 && adjusted >= -6 {
            if exponent == 0 {
                text = String(digits)
            } else if digits.count > -exponent {
                let point = digits.count + exponent
                text = String(digits[..<point]) + "." + String(digits[point...])
            } else {
                text = "0." + String(repeating: "0", count: -exponent - digits.count) + String(digits)
            }
        } else {
            text = String(digits[0])
            if digits.count > 1 { text += "." + String(digits[1...]) }
            text += "E" + (adjusted >= 0 ? "+" : "") + String(adjusted)
        }
        return (negative ? "-" : "") + text
    }
}
