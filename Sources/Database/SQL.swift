/// A statement whose interpolated values are always bound parameters: `"... where id = \(id)"`
/// becomes `... where id = $1` with `id` sent apart from the text. Raw SQL must be spelled
/// `\(unsafeSQL: ...)`, which is reserved for identifiers and fragments the code itself owns.
public struct SQL: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    public private(set) var text: String
    public private(set) var binds: [String?]
    /// Sent as a named statement that the connection prepares once and reuses (parsed and
    /// analysed once per connection, its plan cached by PostgreSQL); see `reused()`.
    public private(set) var isReused = false

    /// This statement, parsed once per connection and reused: for statements of fixed text
    /// that a hot path sends again and again (the write path). Their plans may become
    /// PostgreSQL's generic plan after five runs, so keep it to statements whose plan does
    /// not depend on the values (lookups by key, function calls).
    public func reused() -> SQL {
        var copy = self
        copy.isReused = true
        return copy
    }

    /// `statement.reused()`, spelled where a literal is written: `.reused("select ...")`.
    public static func reused(_ statement: SQL) -> SQL { statement.reused() }

    public init(stringLiteral value: String) {
        text = value
        binds = []
    }

    public init(stringInterpolation: Interpolation) {
        text = stringInterpolation.text
        binds = stringInterpolation.binds
    }

    public init(unsafeSQL text: String, binds: [String?] = []) {
        self.text = text
        self.binds = binds
    }

    public struct Interpolation: StringInterpolationProtocol {
        var text = ""
        var binds: [String?] = []

        public init(literalCapacity: Int, interpolationCount: Int) {
            text.reserveCapacity(literalCapacity + interpolationCount * 3)
        }

        public mutating func appendLiteral(_ literal: String) { text += literal }

        public mutating func appendInterpolation(_ value: some SQLValue) {
            binds.append(value.sqlText)
            text += "$\(binds.count)"
        }

        public mutating func appendInterpolation(_ value: (some SQLValue)?) {
            binds.append(value?.sqlText)
            text += "$\(binds.count)"
        }

        /// Splices another statement, renumbering its parameters.
        public mutating func appendInterpolation(_ fragment: SQL) {
            text += SQL.renumber(fragment.text, offset: binds.count)
            binds += fragment.binds
        }

        public mutating func appendInterpolation(unsafeSQL raw: String) { text += raw }
    }

    public static func + (lhs: SQL, rhs: SQL) -> SQL {
        SQL(unsafeSQL: lhs.text + renumber(rhs.text, offset: lhs.binds.count), binds: lhs.binds + rhs.binds)
    }

    /// Joins fragments with a separator, renumbering parameters. In one pass: joining by `+`
    /// copied the text built so far at every part (the event publisher's seven-branch read,
    /// docs/performance/round-06.md, "The event publisher's CPU per event").
    public static func join(_ parts: [SQL], separator: String) -> SQL {
        var text = ""
        var binds: [String?] = []
        text.reserveCapacity(parts.reduce(0) { $0 + $1.text.utf8.count + separator.utf8.count + 8 })
        for (index, part) in parts.enumerated() {
            if index > 0 { text += separator }
            text += renumber(part.text, offset: binds.count)
            binds += part.binds
        }
        return SQL(unsafeSQL: text, binds: binds)
    }

    /// Shifts `$n` placeholders of a fragment by `offset`. Only our own statement texts
    /// go through here; `$` inside string literals is not used in them.
    /// On UTF-8 bytes (`$` and digits are ASCII, so never inside a multi-byte character):
    /// Foundation's `contains` and Character iteration cost more than the statement's other
    /// building on an idle poll.
    static func renumber(_ text: String, offset: Int) -> String {
        let dollar = UInt8(ascii: "$")
        guard offset > 0, text.utf8.contains(dollar) else { return text }
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 8)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            out.append(byte)
            guard byte == dollar else { continue }
            var number = 0, digits = 0
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                number = number * 10 + Int(bytes[index] - UInt8(ascii: "0"))
                digits += 1
                index += 1
            }
            if digits > 0 { out += String(number + offset).utf8 }
        }
        return String(decoding: out, as: UTF8.self)
    }

    public var description: String { text }
}

/// A value that can be bound as a parameter, in PostgreSQL's text format.
public protocol SQLValue: Sendable {
    var sqlText: String { get }
}

extension String: SQLValue { public var sqlText: String { self } }
extension Substring: SQLValue { public var sqlText: String { String(self) } }
extension Int: SQLValue { public var sqlText: String { String(self) } }
extension Int64: SQLValue { public var sqlText: String { String(self) } }
extension Int32: SQLValue { public var sqlText: String { String(self) } }
extension Double: SQLValue { public var sqlText: String { "\(self)" } }
extension Bool: SQLValue { public var sqlText: String { self ? "t" : "f" } }

/// A text[] parameter (`= any(\(list))`, a push's ids, partitions and change ids). Made on
/// UTF-8 bytes in one buffer: built with Character iteration and string concatenation, it
/// was a third of the worker's CPU in a push of 25 reports while the documents went as a
/// `jsonb[]` too, full of quotes to escape (docs/performance/round-05.md, "The worker's CPU per
/// pushed document"; they now go as one JSON array, `WritePlan`).
extension Array: SQLValue where Element == String {
    public var sqlText: String {
        var out: [UInt8] = []
        // Room for the quotes, commas and a fifth of the bytes escaped (a serialized document).
        let bytes = reduce(0) { $0 + $1.utf8.count }
        out.reserveCapacity(2 + 3 * count + bytes + bytes / 5)
        out.append(UInt8(ascii: "{"))
        for (index, element) in enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            Self.appendArrayElement(element, to: &out)
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    /// Backslash and double quote escaped (both ASCII, so never inside a multi-byte
    /// character); the runs between them are copied whole.
    static func appendArrayElement(_ text: String, to out: inout [UInt8]) {
        var text = text
        text.withUTF8 { utf8 in
            var runStart = 0
            for index in utf8.indices where utf8[index] == UInt8(ascii: "\\") || utf8[index] == UInt8(ascii: "\"") {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                out.append(UInt8(ascii: "\\"))
                runStart = index
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
    }
}

/// Bytes bound as bytea (hex format).
public struct SQLBytes: SQLValue {
    public let bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public var sqlText: String {
        let hex = Array("0123456789abcdef".utf8)
        var text: [UInt8] = [UInt8(ascii: "\\"), UInt8(ascii: "x")]
        text.reserveCapacity(2 + bytes.count * 2)
        for b in bytes {
            text.append(hex[Int(b >> 4)])
            text.append(hex[Int(b & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
