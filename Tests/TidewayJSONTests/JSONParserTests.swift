import Testing

@testable import TidewayJSON

@Suite struct JSONParserTests {
    @Test func parsesEveryKindOfValue() throws {
        let value = try JSON(parsing: #" {"a": [1, -2.5, true, false, null, "x"], "b": {}, "c": []} "#)
        #expect(value == ["a": [1, -2.5, true, false, nil, "x"], "b": [:], "c": []])
    }

    @Test func integersFittingInt64StayExact() throws {
        #expect(try JSON(parsing: "9223372036854775807") == .int(.max))
        #expect(try JSON(parsing: "-9223372036854775808") == .int(.min))
        #expect(try JSON(parsing: "9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try JSON(parsing: "-0") == .int(0))
        #expect(try JSON(parsing: "1.0") == .double(1))
        #expect(try JSON(parsing: "1E2") == .double(100))
        #expect(try JSON(parsing: "-1.5e-3") == .double(-0.0015))
    }

    @Test func decodesEscapesAndSurrogatePairs() throws {
        #expect(try JSON(parsing: #""\"\\\/\b\f\n\r\t""#) == .string("\"\\/\u{8}\u{C}\n\r\t"))
        #expect(try JSON(parsing: #""\u00e9\u4E2D""#) == .string("é中"))
        #expect(try JSON(parsing: #""\ud83d\udc1f fish""#) == .string("🐟 fish"))
        #expect(try JSON(parsing: "\"raw é 🐟\"") == .string("raw é 🐟"))
    }

    @Test func acceptsEveryInputType() throws {
        let bytes: [UInt8] = Array(#"{"k":[1]}"#.utf8)
        let expected: JSON = ["k": [1]]
        #expect(try JSON(parsing: bytes) == expected)
        #expect(try JSON(parsing: bytes[...]) == expected)
        #expect(try bytes.withUnsafeBytes { (raw) throws(JSONParseError) in try JSON(parsing: raw) } == expected)
        // Not contiguous: goes through the copying path.
        #expect(try JSON(parsing: bytes.lazy.map { $0 }) == expected)
    }

    @Test(arguments: [
        ("", "unexpected end of input"),
        ("[1,]", "trailing comma"),
        (#"{"a":1,}"#, "object key was expected"),
        ("[1 2]", "',' or ']'"),
        (#"{"a" 1}"#, "':' was expected"),
        ("// c\n1", "value was expected"),
        ("/* c */ 1", "value was expected"),
        ("NaN", "value was expected"),
        ("Infinity", "value was expected"),
        ("-Infinity", "digit expected"),
        ("01", "leading zero"),
        ("1.", "decimal point"),
        (".5", "value was expected"),
        ("1e", "exponent"),
        ("+1", "value was expected"),
        ("1e400", "number out of range"),
        ("tru", "value was expected"),
        ("nul", "value was expected"),
        ("'a'", "value was expected"),
        ("1 2", "after the JSON value"),
        ("{} x", "after the JSON value"),
        ("\"a\tb\"", "control character"),
        ("\"a\nb\"", "control character"),
        ("\"abc", "unterminated string"),
        (#""\x""#, "invalid escape"),
        (#""\u12""#, #"invalid \u escape"#),
        (#""\u12G4""#, #"invalid \u escape"#),
        (#""\ud83d""#, "lone UTF-16 surrogate"),
        (#""\ud83d\u0041""#, "lone UTF-16 surrogate"),
        (#""\udc1f""#, "lone UTF-16 surrogate"),
        (#""\u0000""#, #"\u0000 is not accepted"#),
        (#"{"a":1,"a":2}"#, "duplicate object key \"a\""),
        ("{1:2}", "object key was expected"),
        ("\u{FEFF}1", "value was expected"),
    ])
    func rejects(input: String, expectedMessage: String) {
        #expect {
            try JSON(parsing: input)
        } throws: { error in
            let error = error as! JSONParseError
            return error.kind == .syntax && error.message.contains(expectedMessage) && error.message.contains("at byte")
        }
    }

    @Test func rejectsInvalidUTF8() {
        for bytes: [UInt8] in [[0x22, 0xFF, 0x22], [0x22, 0xC3, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0xC3, 0xA9]] {
            #expect(throws: JSONParseError.self) { try JSON(parsing: bytes) }
        }
    }

    @Test func reportsTheByteOffset() {
        #expect(throws: JSONParseError(.syntax, "unexpected ']' (trailing comma)", at: 7)) {
            try JSON(parsing: "[1, 2, ]")
        }
        #expect(throws: JSONParseError(.syntax, "duplicate object key \"b\"", at: 12)) {
            try JSON(parsing: #"{"b": 1,    "b": 2}"#)
        }
    }

    /// The fields are gathered and the object made at its end: a repeated key is still the
    /// error, the first in the text, even when a later error stops the object.
    @Test func aRepeatedKeyIsTheFirstErrorInTheText() throws {
        #expect(throws: JSONParseError(.syntax, "duplicate object key \"a\"", at: 7)) {
            try JSON(parsing: #"{"a":1,"a":2,"b":[}"#)
        }
        // A value is parsed before its key is checked, as it always was: the inner repeat.
        #expect(throws: JSONParseError(.syntax, "duplicate object key \"x\"", at: 18)) {
            try JSON(parsing: #"{"a":1,"a":{"x":1,"x":2}}"#)
        }
        #expect(throws: JSONParseError(.syntax, "duplicate object key \"x\"", at: 18)) {
            try JSON(parsing: #"{"a":1,"b":{"x":1,"x":2},"a":3}"#)
        }
        // A value that does not parse is the error: its key was never added.
        #expect(throws: JSONParseError(.syntax, "unexpected '1' where ':' was expected", at: 16)) {
            try JSON(parsing: #"{"a":1,"a":{"b" 1}}"#)
        }
        #expect(try JSON(parsing: #"{"a":{"a":{"a":1}},"b":[{"a":2},{"a":3}]}"#)
                == ["a": ["a": ["a": 1]], "b": [["a": 2], ["a": 3]]])
    }

    @Test func depth32IsAcceptedAnd33Refused() throws {
        func nested(_ depth: Int) -> String { String(repeating: "[", count: depth) + String(repeating: "]", count: depth) }
        #expect(throws: Never.self) { try JSON(parsing: nested(32)) }
        #expect(throws: Never.self) { try JSON(parsing: String(repeating: #"{"a":"#, count: 32) + "1" + String(repeating: "}", count: 32)) }
        #expect { try JSON(parsing: nested(33)) } throws: { ($0 as! JSONParseError).kind == .tooDeep }
        #expect { try JSON(parsing: nested(100_000)) } throws: { ($0 as! JSONParseError).kind == .tooDeep }
        #expect(throws: Never.self) { try JSON(parsing: nested(33), limits: JSONLimits(maxDepth: 33)) }
    }

    @Test func stringLimitCountsDecodedBytes() throws {
        let limits = JSONLimits(maxStringBytes: 4)
        #expect(try JSON(parsing: #""abcd""#, limits: limits) == "abcd")
        #expect(try JSON(parsing: #""\u00e9\u00e9""#, limits: limits) == "éé")
        for tooLong in [#""abcde""#, #""\u00e9\u00e9a""#, #"{"abcde": 1}"#] {
            #expect { try JSON(parsing: tooLong, limits: limits) } throws: { ($0 as! JSONParseError).kind == .stringTooLong }
        }
        let defaultLimit = "\"" + String(repeating: "x", count: 256 * 1024) + "\""
        #expect(throws: Never.self) { try JSON(parsing: defaultLimit) }
        let overDefaultLimit = "\"" + String(repeating: "x", count: 256 * 1024 + 1) + "\""
        #expect { try JSON(parsing: overDefaultLimit) } throws: { ($0 as! JSONParseError).kind == .stringTooLong }
    }

    @Test func nullCharacterCanBeAllowed() throws {
        #expect(try JSON(parsing: #""a\u0000""#, limits: JSONLimits(allowsNullCharacter: true)) == .string("a\u{0}"))
    }

    @Test func parsesABigInput() throws {
        let element = #"{"id": 123456, "name": "vessel \"Amani\" \u00e9", "weight": 12.75, "ok": true, "tags": ["a", "b"]}"#
        let text = "[" + Array(repeating: element, count: 50_000).joined(separator: ",") + "]"
        let value = try JSON(parsing: text)
        #expect(value.arrayValue?.count == 50_000)
        #expect(value.arrayValue?.last?["name"] == "vessel \"Amani\" é")
    }

    /// The string scan's eight-byte words: a control character, a stray byte of invalid UTF-8
    /// or the missing end at every offset is refused as byte by byte, at the same byte.
    @Test func refusalsAtEveryOffsetOfTheScan() {
        for length in 1...20 {
            for offset in 0..<length {
                var control = Array(repeating: UInt8(ascii: "a"), count: length)
                control[offset] = 0x09
                let controlText = [UInt8(ascii: "\"")] + control + [UInt8(ascii: "\"")]
                #expect(throws: JSONParseError(.syntax, "unescaped control character 0x9 in string", at: offset + 1)) {
                    try JSON(parsing: controlText)
                }
                var invalid = control
                invalid[offset] = 0xFF
                #expect(throws: JSONParseError(.syntax, "invalid UTF-8 in string", at: 0)) {
                    try JSON(parsing: [UInt8(ascii: "\"")] + invalid + [UInt8(ascii: "\"")])
                }
            }
            #expect(throws: JSONParseError(.syntax, "unterminated string", at: 0)) {
                try JSON(parsing: [UInt8(ascii: "\"")] + Array(repeating: UInt8(ascii: "a"), count: length))
            }
        }
    }

    /// An ASCII string is made from the input's bytes without a second check
    /// (`JSONParser.makeASCIIString`): made so, at every length either side of a small string's
    /// 15 bytes and far beyond, it is the String made the usual way (bytes, characters, equality,
    /// hash), as a value and as a key; a non-ASCII one at any offset is validated as before.
    @Test func stringsMadeFromTheInputAreTheStringsSwiftMakes() throws {
        for length in Array(0...40) + [100, 4_096, 70_000] {
            for special in ["", "é", "🐟", "\u{301}", "\\n", "\\u00e9"] {
                let offsets = special.isEmpty ? [0] : Array(Set([0, length / 2, length]))
                for offset in offsets {
                    var plain = String(repeating: "a", count: length)
                    plain.insert(contentsOf: special, at: plain.index(plain.startIndex, offsetBy: offset))
                    let expected = plain.replacingOccurrences(of: "\\n", with: "\n").replacingOccurrences(of: "\\u00e9", with: "é")
                    let parsed = try JSON(parsing: "[\"\(plain)\", {\"\(plain)\": 1, \"~\": 2}]")
                    guard case .string(let text)? = parsed.arrayValue?.first else {
                        Issue.record("not a string")
                        continue
                    }
                    let swiftMade = String(decoding: Array(expected.utf8), as: UTF8.self)
                    #expect(text == swiftMade && text.count == swiftMade.count && Array(text.utf8) == Array(swiftMade.utf8))
                    #expect(text.hashValue == swiftMade.hashValue && Set([text]).contains(swiftMade))
                    #expect(text.unicodeScalars.elementsEqual(swiftMade.unicodeScalars))
                    let object = parsed.arrayValue?.last?.objectValue
                    let byteOrder = [swiftMade, "~"].sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
                    #expect(object?[swiftMade] == 1 && object?.keys == byteOrder)
                    #expect(JSON.string(text).serialized() == JSON.string(swiftMade).serialized())
                }
            }
        }
    }

    /// Invalid UTF-8 is refused as before wherever it is in a string, short or long, ASCII
    /// around it or not: a stray continuation byte, a lead byte cut short, an overlong form, an
    /// encoded surrogate, a byte never in UTF-8.
    @Test func invalidUTF8IsRefusedAtEveryLength() {
        let invalid: [[UInt8]] = [[0x80], [0xC3], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xFF]]
        for length in [0, 1, 7, 8, 15, 16, 17, 40, 1_000] {
            for bad in invalid {
                for offset in Set([0, length / 2, length]) {
                    var bytes = Array(repeating: UInt8(ascii: "b"), count: length)
                    bytes.insert(contentsOf: bad, at: offset)
                    #expect(throws: JSONParseError(.syntax, "invalid UTF-8 in string", at: 1)) {
                        try JSON(parsing: [UInt8(ascii: "[")] + [0x22] + bytes + [0x22, UInt8(ascii: "]")])
                    }
                    #expect(throws: JSONParseError(.syntax, "invalid UTF-8 in string", at: 1)) {
                        try JSON(parsing: [UInt8(ascii: "{")] + [0x22] + bytes + Array(#"":1}"#.utf8))
                    }
                }
            }
        }
    }
}
