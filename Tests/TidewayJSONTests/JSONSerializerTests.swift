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

    /// Strings are scanned eight bytes at a time: an escape, a multi-byte character or the
    /// end at every offset of the first words must come out as byte by byte.
    @Test func escapesAtEveryOffsetOfTheScan() throws {
        for length in 0...20 {
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
}
