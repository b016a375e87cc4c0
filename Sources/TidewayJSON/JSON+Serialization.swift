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
///
/// The buffer is memory of its own rather than an `[UInt8]`: an array appended to checks its
/// uniqueness and its capacity at every append (a byte of punctuation, a string's run; with a
/// String per integer, a quarter of the writer's instructions). Here the room for a piece is
/// made once (`reserve`), then its bytes are stored without a check; `output` copies the text
/// out once, at its exact size. Not copyable, so that two writers never share (or free twice)
/// one buffer.
public struct JSONWriter: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    private var count = 0
    private var capacity: Int

    public init(capacity: Int = 1024) {
        self.capacity = max(capacity, 32)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// The text written so far.
    public var output: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    /// Text that is JSON already (punctuation between the values written).
    public mutating func raw(_ text: StaticString) {
        reserve(text.utf8CodeUnitCount)
        (base + count).update(from: text.utf8Start, count: text.utf8CodeUnitCount)
        count &+= text.utf8CodeUnitCount
    }

    public mutating func write(_ value: JSON) {
        switch value {
        case .null: raw("null")
        case .bool(let flag): flag ? raw("true") : raw("false")
        case .int(let number): writeInteger(number)
        // Swift's shortest spelling, as before (a small string: no allocation).
        case .double(let number): number.isFinite ? writeEscaping(number.description, quoted: false) : raw("null")
        case .string(let text): writeEscaping(text, quoted: true)
        case .array(let elements):
            byte(UInt8(ascii: "["))
            for index in elements.indices {
                if index > 0 { byte(UInt8(ascii: ",")) }
                write(elements[index])
            }
            byte(UInt8(ascii: "]"))
        case .object(let object):
            byte(UInt8(ascii: "{"))
            // In the canonical order already (JSONObject).
            for index in object.fields.indices {
                if index > 0 { byte(UInt8(ascii: ",")) }
                writeEscaping(object.fields[index].key, quoted: true)
                byte(UInt8(ascii: ":"))
                write(object.fields[index].value)
            }
            byte(UInt8(ascii: "}"))
        }
    }

    /// Room for `needed` more bytes; the buffer doubles when it has not.
    @inline(__always)
    private mutating func reserve(_ needed: Int) {
        if needed > capacity &- count { grow(needed) }
    }

    @inline(never)
    private mutating func grow(_ needed: Int) {
        let larger = max(capacity * 2, count + needed)
        let moved = UnsafeMutablePointer<UInt8>.allocate(capacity: larger)
        moved.initialize(from: base, count: count)
        base.deallocate()
        base = moved
        capacity = larger
    }

    @inline(__always)
    private mutating func byte(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count &+= 1
    }

    /// The digits written straight into the buffer, as `String(Int64)` spells them (a String
    /// per number before).
    private mutating func writeInteger(_ number: Int64) {
        reserve(20)  // "-9223372036854775808"
        if number < 0 {
            base[count] = UInt8(ascii: "-")
            count &+= 1
        }
        var magnitude = number.magnitude
        var digits = 1
        var rest = magnitude / 10
        while rest > 0 {
            digits &+= 1
            rest /= 10
        }
        count &+= digits
        var position = count
        repeat {
            position &-= 1
            base[position] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
            magnitude /= 10
        } while magnitude > 0
    }

    private mutating func writeEscaping(_ text: String, quoted: Bool) {
        // Native Swift strings are contiguous UTF-8 already: read in place, not copied (the copy
        // into a `var` for `withUTF8` cost a retain, release and uniqueness check per string).
        if text.utf8.withContiguousStorageIfAvailable({ writeEscaping($0, quoted: quoted) }) == nil {
            var text = text
            text.withUTF8 { writeEscaping($0, quoted: quoted) }
        }
    }

    /// The text, stored as it is scanned, eight bytes at a time while none needs an escape;
    /// room for it and its quotes is made once, and again at an escape (up to six bytes for one).
    private mutating func writeEscaping(_ utf8: UnsafeBufferPointer<UInt8>, quoted: Bool) {
        let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
        reserve(utf8.count &+ 2)
        var out = base + count
        if quoted {
            out.pointee = quote
            out += 1
        }
        var index = 0
        while index < utf8.count {
            // Eight bytes at once when none of them needs an escape (the bit tricks of
            // `anyNeedsEscape` are exact for "some byte of the word").
            if utf8.count &- index >= 8 {
                let word = UnsafeRawPointer(utf8.baseAddress! + index).loadUnaligned(as: UInt64.self)
                if !Self.anyNeedsEscape(word) {
                    UnsafeMutableRawPointer(out).storeBytes(of: word, as: UInt64.self)
                    out += 8
                    index &+= 8
                    continue
                }
            }
            let byte = utf8[index]
            index &+= 1
            if byte >= 0x20 && byte != quote && byte != backslash {
                out.pointee = byte
                out += 1
                continue
            }
            count = out - base
            reserve(6 &+ (utf8.count &- index) &+ 1)  // this escape, the rest, the closing quote
            out = Self.escape(byte, at: base + count)
        }
        if quoted {
            out.pointee = quote
            out += 1
        }
        count = out - base
    }

    /// Whether a byte of `word` is below 0x20, `"` or `\\`.
    @inline(__always)
    private static func anyNeedsEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        func anyZero(_ x: UInt64) -> Bool { (x &- ones) & ~x & highs != 0 }
        let below20 = (word &- 0x20 &* ones) & ~word & highs != 0
        return below20 || anyZero(word ^ (0x22 &* ones)) || anyZero(word ^ (0x5C &* ones))
    }

    /// Writes the escape of `byte` at `out`; returns the place after it.
    private static func escape(_ byte: UInt8, at out: UnsafeMutablePointer<UInt8>) -> UnsafeMutablePointer<UInt8> {
        out[0] = UInt8(ascii: "\\")
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): out[1] = byte
        case 0x08: out[1] = UInt8(ascii: "b")
        case 0x0C: out[1] = UInt8(ascii: "f")
        case 0x0A: out[1] = UInt8(ascii: "n")
        case 0x0D: out[1] = UInt8(ascii: "r")
        case 0x09: out[1] = UInt8(ascii: "t")
        default:
            func hex(_ nibble: UInt8) -> UInt8 { nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") - 10 + nibble }
            out[1] = UInt8(ascii: "u")
            out[2] = UInt8(ascii: "0")
            out[3] = UInt8(ascii: "0")
            out[4] = hex(byte >> 4)
            out[5] = hex(byte & 0xF)
            return out + 6
        }
        return out + 2
    }
}
