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
}
