import Testing

@testable import TidewayJSON

/// `JSONObject` keeps its fields in the canonical order and means what `[String: JSON]` meant:
/// the same lookups, the same equality, the same duplicate keys refused by the parser.
@Suite struct JSONObjectTests {
    @Test func fieldsStayInUTF8ByteOrderWhateverTheInsertionOrder() {
        var object: JSONObject = ["b": 1, "é": 2, "a": 3, "Z": 4, "": 5, "🐟": 6, "aa": 7]
        #expect(object.keys == ["", "Z", "a", "aa", "b", "é", "🐟"])
        object["ab"] = 8
        object["a"] = nil
        object["Z"] = 9
        #expect(object.keys == ["", "Z", "aa", "ab", "b", "é", "🐟"])
        #expect(object["Z"] == 9 && object["a"] == nil && object.count == 7)
        #expect(object.removeValue(forKey: "b") == 1 && object.updateValue(10, forKey: "c") == nil)
        #expect(object.keys == ["", "Z", "aa", "ab", "c", "é", "🐟"])
        #expect(JSONObject(Dictionary(uniqueKeysWithValues: object.map { ($0.key, $0.value) })) == object)
        #expect(object.dictionary.count == 7)
    }

    @Test func literalsKeepTheLastValueOfARepeatedKey() {
        let object: JSONObject = ["a": 1, "b": 2, "a": 3]
        #expect(object.keys == ["a", "b"] && object["a"] == 3)
    }

    @Test func equalAndHashedAsTheSameSetOfFields() {
        let one: JSONObject = ["x": 1, "y": [2, ["z": true]]]
        var other: JSONObject = ["y": [2, ["z": true]]]
        other["x"] = 1
        #expect(one == other && one.hashValue == other.hashValue)
        #expect(one != ["x": 1] && one != ["x": 2, "y": [2, ["z": true]]])
    }

    /// Swift's `==` on strings is canonical equivalence, and `[String: JSON]` found keys by it.
    @Test func canonicallyEquivalentKeysAreOneKey() {
        var object: JSONObject = ["é": 1, "b": 2]
        #expect(object["e\u{301}"] == 1)
        object["e\u{301}"] = 3
        #expect(object.keys == ["b", "é"] && object["é"] == 3)
        let decomposed: JSONObject = ["e\u{301}": 3, "b": 2]
        #expect(object == decomposed && object.hashValue == decomposed.hashValue)
        // The Kelvin sign is canonically equivalent to an ASCII "K".
        let kelvin: JSONObject = ["\u{212A}": 1]
        #expect(kelvin["K"] == 1)
        #expect((["K": 1] as JSONObject)["\u{212A}"] == 1)
        object["e\u{301}"] = nil
        #expect(object.keys == ["b"])
    }

    @Test func parsedObjectsAreInTheCanonicalOrder() throws {
        let parsed = try JSON(parsing: #"{"b":1,"\u0061":2,"é":3,"A":{"y":1,"x":2},"":4}"#)
        #expect(parsed.objectValue?.keys == ["", "A", "a", "b", "é"])
        #expect(parsed["A"]?.objectValue?.keys == ["x", "y"])
        #expect(parsed.serialized() == #"{"":4,"A":{"x":2,"y":1},"a":2,"b":1,"é":3}"#)
    }

    @Test(arguments: [
        (#"{"é":1,"e\u0301":2}"#, "duplicate object key \"e\u{301}\"", 8),
        ("{\"e\u{301}\":1,\"é\":2}", "duplicate object key \"é\"", 9),
        (#"{"\u212A":1,"K":2}"#, "duplicate object key \"K\"", 12),
        (#"{"\u0061":1,"a":2}"#, "duplicate object key \"a\"", 12),
    ])
    func keysEqualWithOtherBytesAreDuplicates(text: String, message: String, offset: Int) {
        #expect(throws: JSONParseError(.syntax, message, at: offset)) { try JSON(parsing: text) }
    }

    /// The parser sorts an object's keys and finds duplicates as equal neighbours: the error must
    /// name the key the dictionary named, the first repeated in the text, at the same offset.
    @Test func duplicatesOfUnsortedObjectsAreReportedAsTheFirstRepeatedInTheText() {
        var generator = SystemRandomNumberGenerator()
        let names = ["a", "b", "c", "ab", "ba", "A", "é", "_id", "z9", "\\u0062"]
        for _ in 0..<400 {
            let count = Int.random(in: 1...60, using: &generator)
            let keys = (0..<count).map { _ in
                names.randomElement(using: &generator)! + (Bool.random() ? "" : String(Int.random(in: 0..<30)))
            }
            var text = "{"
            var offsets: [Int] = []
            for (index, key) in keys.enumerated() {
                if index > 0 { text += "," }
                offsets.append(text.utf8.count)
                text += "\"\(key)\":\(index)"
            }
            text += "}"
            // The dictionary's answer: the first key already seen, in the text's order.
            var seen: Set<String> = []
            var expected: JSONParseError? = nil
            for (index, key) in keys.enumerated() {
                let decoded = key.hasPrefix("\\u0062") ? "b" + key.dropFirst(6) : key
                if !seen.insert(decoded).inserted {
                    expected = JSONParseError(.syntax, "duplicate object key \"\(decoded)\"", at: offsets[index])
                    break
                }
            }
            do {
                let parsed = try JSON(parsing: text)
                #expect(expected == nil, "\(text)")
                let parsedKeys = parsed.objectValue?.keys ?? []
                #expect(parsedKeys == parsedKeys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }, "\(text)")
                #expect(parsedKeys.count == keys.count)
            } catch {
                #expect(error == expected, "\(text)")
            }
        }
    }

    /// `precedes` is the order of an object's fields (what `Schema.Fields` sorts its keys by).
    @Test func precedesIsTheFieldsOrder() {
        let keys = ["b", "é", "a", "Z", "", "🐟", "aa", "e\u{301}x", "reportingOfficer", "reportingOfficers", "\u{212A}"]
        let object = JSONObject(keys.map { ($0, JSON.null) })
        #expect(keys.sorted(by: JSONObject.precedes) == object.keys)
        #expect(!JSONObject.precedes("a", "a") && JSONObject.precedes("a", "aa") && !JSONObject.precedes("aa", "a"))
    }
}
