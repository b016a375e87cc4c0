import Foundation
import Testing

@testable import TidewayJSON

@Suite struct JSONSerializerTests {
    @Test func writesCompactTextWithSortedKeys() {
        let value: JSON = ["b": [1, true, nil], "a": ["z": "x", "y": 2.5], "é": 0, "B": false]
        #expect(value.serialized() == #"{"B":false,"a":{"y":2.5,"z":"x"},"b":[1,true,null],"é":0}"#)
    }

    @Test func sameValueGivesSameBytes() throws {
        let first = try JSON(parsing: #"{"x": 1, "y": {"q": [1, 2], "p": "s"}, "a": null}"#)
        let second = try JSON(parsing: #"{"a":null,"y":{"p":"s","q":[1,2]},"x":1}"#)
        #expect(first.serializedBytes() == second.serializedBytes())
        #expect(first.serialized() == #"{"a":null,"x":1,"y":{"p":"s","q":[1,2]}}"#)
    }

    @Test func escapesQuotesBackslashesAndControlCharacters() {
        let text = JSON.string("q\"b\\s/\u{8}\u{C}\n\r\t\u{0}\u{1F}é🐟\u{7F}").serialized()
        #expect(text == #""q\"b\\s/\b\f\n\r\t\u0000\u001fé🐟"# + "\u{7F}\"")
        #expect(JSON.object(["a\"b": 1]).serialized() == #"{"a\"b":1}"#)
    }

    @Test func doublesRoundTripAndKeepTheirFraction() throws {
        let doubles: [Double] = [0.1, -0.0, 3.0, 1e16, 1e-7, 123456.789, .pi, .leastNonzeroMagnitude, .greatestFiniteMagnitude, -2.5e-300]
        for number in doubles {
            let text = JSON.double(number).serialized()
            #expect(try JSON(parsing: text) == .double(number), "\(text)")
        }
        #expect(JSON.double(3).serialized() == "3.0")
        #expect(JSON.int(3).serialized() == "3")
        #expect(JSON.int(.min).serialized() == "-9223372036854775808")
    }

    @Test func nonFiniteDoublesBuiltInSwiftAreWrittenAsNull() {
        #expect(JSON.array([.double(.nan), .double(.infinity)]).serialized() == "[null,null]")
    }

    @Test func parseSerializeRoundTrip() throws {
        let text = #"{"arr":[[],{},"",0,-1,1.5,true,false,null],"nested":{"deep":{"k":"\u001f\"\\"}},"unicode":"中文 🐟"}"#
        let value = try JSON(parsing: text)
        #expect(value.serialized() == text)
        #expect(try JSON(parsing: value.serializedBytes()) == value)
    }

    /// Strings are written eight bytes at a time: an escape, a multi-byte character or the
    /// end at every offset of the first words must come out as byte by byte.
    @Test func escapesAtEveryOffsetOfTheScan() throws {
        for length in 0...40 {
            for offset in 0..<max(length, 1) {
                for special in ["\"", "\\", "\n", "\u{1}", "\u{1F}", "é", "🐟", "\u{7F}", " "] {
                    var characters = Array(repeating: "a", count: length)
                    if length > 0 { characters[offset] = special }
                    let text = characters.joined()
                    let expected = "\"" + characters.map { Self.escaped($0) }.joined() + "\""
                    #expect(JSON.string(text).serialized() == expected)
                    #expect(try JSON(parsing: expected) == .string(text))
                }
            }
        }
    }

    private static func escaped(_ piece: String) -> String {
        switch piece {
        case "\"": return "\\\""
        case "\\": return "\\\\"
        case "\n": return "\\n"
        case "\u{1}": return "\\u0001"
        case "\u{1F}": return "\\u001f"
        default: return piece
        }
    }

    /// Integers are written digit by digit, as `String(Int64)` writes them.
    @Test func integersAsSwiftWritesThem() {
        var values: [Int64] = [0, 1, -1, 9, 10, -10, 99, 100, .max, .min, .max - 1, .min + 1]
        var power: Int64 = 1
        for _ in 0..<18 {
            power *= 10
            values += [power, power - 1, -power, -(power - 1)]
        }
        for value in values {
            #expect(JSON.int(value).serialized() == String(value))
        }
    }

    @Test func integersAtTheEdges() {
        let cases: [(Int64, String)] = [
            (0, "0"), (-1, "-1"), (7, "7"), (-7, "-7"), (.max, "9223372036854775807"), (.min, "-9223372036854775808"),
            (1_000_000_000_000_000_000, "1000000000000000000"), (-999_999_999_999_999_999, "-999999999999999999"),
        ]
        for (number, text) in cases {
            #expect(JSON.int(number).serialized() == text)
            #expect(JSON.array([.int(number), .int(number)]).serialized() == "[\(text),\(text)]")
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let number = Int64(bitPattern: generator.next()) >> Int64.random(in: 0...63, using: &generator)
            #expect(JSON.int(number).serialized() == String(number))
        }
    }

    /// A double is written as Swift's `description` spells it, byte for byte.
    @Test func doublesAsSwiftSpellsThem() {
        var doubles: [Double] = [
            0, -0.0, 1, -1, 3, 1e15, 1e16, 1e17, -1e16, 123456789012345680, 1e21, 1e22, 1e23, 0.1, 0.5, 1e-4, 1e-5, 1e-7,
            .pi, -.pi, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .leastNormalMagnitude, .greatestFiniteMagnitude,
            -.greatestFiniteMagnitude, .ulpOfOne, 9_007_199_254_740_993, 2.5e-300, 5e-324, 1.7976931348623157e308,
        ]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let number = Double(bitPattern: generator.next())
            if number.isFinite { doubles.append(number) }
        }
        for number in doubles {
            #expect(JSON.double(number).serialized() == number.description)
            #expect(JSON.object(["n": .double(number)]).serialized() == #"{"n":"# + number.description + "}")
        }
        #expect(JSON.double(-0.0).serialized() == "-0.0")
        #expect(JSON.double(1e16).serialized() == "1e+16")
    }

    /// Strings longer than the writer's first buffer, and many values in one writer, come out
    /// whole: the buffer grows with the text.
    @Test func longStringsAndLongTexts() throws {
        for length in [1_023, 1_024, 1_025, 4_096, 70_000] {
            for special in ["a", "\n", "é", "\"", "\u{1}"] {
                let text = String(repeating: "x", count: length - 1) + special
                let written = JSON.string(text).serialized()
                #expect(written == "\"" + String(repeating: "x", count: length - 1) + Self.escaped(special) + "\"")
                #expect(try JSON(parsing: written) == .string(text))
            }
        }
        // Every byte an escape: the text six times the string's length.
        let controls = String(repeating: "\u{1}", count: 5_000)
        #expect(JSON.string(controls).serialized() == "\"" + String(repeating: "\\u0001", count: 5_000) + "\"")
        let many = JSON.array((0..<10_000).map { .object(["k\($0)": .string(String(repeating: "é", count: $0 % 40))]) })
        #expect(try JSON(parsing: many.serializedBytes()) == many)
        var writer = JSONWriter(capacity: 1)
        writer.raw("[")
        writer.write(many)
        writer.raw(",")
        writer.write(.string(controls))
        writer.raw("]")
        #expect(writer.output == Array(("[" + many.serialized() + "," + JSON.string(controls).serialized() + "]").utf8))
    }

    @Test func deepNesting() throws {
        var value: JSON = "bottom"
        var text = #""bottom""#
        for depth in 0..<200 {
            value = depth.isMultiple(of: 2) ? [value, .int(Int64(depth))] : ["k\"\(depth)": value]
            text = depth.isMultiple(of: 2) ? "[\(text),\(depth)]" : #"{"k\""# + "\(depth)\":\(text)}"
        }
        #expect(value.serialized() == text)
    }

    /// Random trees (strings of every length with escapes, control characters and non-ASCII at
    /// random places, numbers of every size, nesting) against a writer spelled out byte by
    /// byte from the rules above.
    @Test func randomTreesAsTheRulesSpellThem() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let value = Self.randomValue(depth: 0, &generator)
            let written = value.serializedBytes()
            #expect(written == Self.reference(value), "\(value)")
            #expect(try JSON(parsing: written, limits: JSONLimits(allowsNullCharacter: true)) == value)
        }
    }

    private static func randomValue(depth: Int, _ generator: inout SystemRandomNumberGenerator) -> JSON {
        switch Int.random(in: 0...(depth > 4 ? 4 : 7), using: &generator) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &generator))
        case 2: return .int(Int64(bitPattern: generator.next()) >> Int64.random(in: 0...63, using: &generator))
        case 3: return .double(Double.random(in: -1e6...1e6, using: &generator) * (Bool.random(using: &generator) ? 1e-300 : 1))
        case 4: return .string(randomString(&generator))
        case 5: return .array((0..<Int.random(in: 0...6, using: &generator)).map { _ in randomValue(depth: depth + 1, &generator) })
        default:
            let fields = (0..<Int.random(in: 0...6, using: &generator)).map { _ in
                (randomString(&generator), randomValue(depth: depth + 1, &generator))
            }
            return .object(JSONObject(fields))
        }
    }

    private static func randomString(_ generator: inout SystemRandomNumberGenerator) -> String {
        let pieces = ["a", "Z", "0", " ", "/", "\"", "\\", "\n", "\t", "\u{0}", "\u{1F}", "\u{7F}", "é", "中", "🐟", "e\u{301}"]
        let length = Int.random(in: 0...(Bool.random(using: &generator) ? 12 : 70), using: &generator)
        let plain = Int.random(in: 0...3, using: &generator) > 0  // mostly runs of plain letters
        return String((0..<length).map { _ in
            plain && Int.random(in: 0...15, using: &generator) > 0 ? "q" : pieces.randomElement(using: &generator)!
        }.joined())
    }

    /// The canonical text by its rules, one character at a time (no shared code with the writer).
    private static func reference(_ value: JSON) -> [UInt8] {
        let named: [Unicode.Scalar: String] = [
            "\"": #"\""#, "\\": #"\\"#, "\u{8}": #"\b"#, "\u{C}": #"\f"#, "\n": #"\n"#, "\r": #"\r"#, "\t": #"\t"#,
        ]
        func string(_ text: String) -> String {
            var out = "\""
            for scalar in text.unicodeScalars {
                if let escape = named[scalar] {
                    out += escape
                } else if scalar.value < 0x20 {
                    out += String(format: "\\u%04x", scalar.value)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        }
        func text(_ value: JSON) -> String {
            switch value {
            case .null: return "null"
            case .bool(let flag): return flag ? "true" : "false"
            case .int(let number): return String(number)
            case .double(let number): return number.isFinite ? "\(number)" : "null"
            case .string(let value): return string(value)
            case .array(let elements): return "[" + elements.map(text).joined(separator: ",") + "]"
            case .object(let object):
                let sorted = object.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
                return "{" + sorted.map { string($0) + ":" + text(object[$0]!) }.joined(separator: ",") + "}"
            }
        }
        return Array(text(value).utf8)
    }
}
