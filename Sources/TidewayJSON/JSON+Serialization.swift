/// Canonical, compact JSON text: the same value always gives the same bytes, because the report
/// history hashes them.
///
/// - Object keys are sorted by their UTF-8 bytes (= Unicode code point order), which any other
///   implementation can reproduce without Swift's String ordering rules.
/// - No whitespace. Non-ASCII is written as raw UTF-8; only `"`, `\` and control characters are
///   escaped (`\b \f \n \r \t`, the others as `\u00XX`). `/` is not escaped.
/// - `.int` is written as an integer. `.double` is written in the shortest form that reads back
///   as the same Double, and integral doubles keep a fraction (`3.0`, `1e+16`), so text parsed
///   back gives the same case: `.double(3)` never turns into `.int(3)`.
/// - A non-finite double cannot come from the parser; if Swift code builds one anyway it is
///   written as `null` (JSON has no spelling for it) rather than crashing a worker.
extension JSON {
    public func serialized() -> String {
        String(decoding: serializedBytes(), as: UTF8.self)
    }

    public func serializedBytes() -> [UInt8] {
        var writer = JSONWriter()
        writer.write(self)
        return writer.output
    }
}

/// Writes JSON values one after another into one buffer: for text put together from values
/// without building a `JSON` of the whole (the request log's line).
public struct JSONWriter {
    public private(set) var output: [UInt8] = []

    public init(capacity: Int = 1024) { output.reserveCapacity(capacity) }

    /// Text that is JSON already (punctuation between the values written).
    public mutating func raw(_ text: StaticString) {
        output.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    public mutating func write(_ value: JSON) {
        switch value {
        case .null: append("null")
        case .bool(let flag): append(flag ? "true" : "false")
        case .int(let number): append(String(number))
        case .double(let number): number.isFinite ? append(number.description) : append("null")
        case .string(let text): writeString(text)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                write(element)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let fields):
            output.append(UInt8(ascii: "{"))
            // In the canonical order already (JSONObject).
            for (index, field) in fields.fields.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                writeString(field.key)
                output.append(UInt8(ascii: ":"))
                write(field.value)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    private mutating func append(_ text: String) {
        output.append(contentsOf: text.utf8)
    }

    private mutating func writeString(_ text: String) {
        output.append(UInt8(ascii: "\""))
        // Native Swift strings are contiguous UTF-8 already: read in place, not copied (the copy
        // into a `var` for `withUTF8` cost a retain, release and uniqueness check per string).
        if text.utf8.withContiguousStorageIfAvailable({ writeEscaping($0) }) == nil {
            var text = text
            text.withUTF8 { writeEscaping($0) }
        }
        output.append(UInt8(ascii: "\""))
    }

    /// The text, its runs without an escape copied whole.
    private mutating func writeEscaping(_ utf8: UnsafeBufferPointer<UInt8>) {
        var runStart = 0
        for index in utf8.indices {
            let byte = utf8[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
            writeEscape(byte)
            runStart = index + 1
        }
        output.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
    }

    private mutating func writeEscape(_ byte: UInt8) {
        output.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""): output.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): output.append(UInt8(ascii: "\\"))
        case 0x08: output.append(UInt8(ascii: "b"))
        case 0x0C: output.append(UInt8(ascii: "f"))
        case 0x0A: output.append(UInt8(ascii: "n"))
        case 0x0D: output.append(UInt8(ascii: "r"))
        case 0x09: output.append(UInt8(ascii: "t"))
        default:
            let hex: [UInt8] = Array("0123456789abcdef".utf8)
            output.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
        }
    }
}
