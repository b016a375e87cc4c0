import Foundation
import Testing

@testable import TidewayJSON

/// The canonical text is hashed by the report history, so a faster parser or serializer must
/// give every output byte it gave before, and refuse what it refused with the same error.
/// Tests/Vectors/canonical-text.json holds, for edge cases and seeded random texts
/// (Tests/Vectors/make_canonical_vectors.py), what the parser and serializer of the eighteenth
/// round made of each: the canonical text, or the error's kind and message, under the default
/// limits and under small ones (depth 3, strings of 8 bytes, `\u0000` allowed).
@Suite struct CanonicalVectorTests {
    @Test func everyVectorGivesTheSameTextOrError() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Vectors/canonical-text.json")
        let file = try Data(contentsOf: url)
        let cases = try #require(try JSON(parsing: file, limits: JSONLimits(allowsNullCharacter: true)).arrayValue)
        #expect(cases.count > 900)
        let small = JSONLimits(maxDepth: 3, maxStringBytes: 8, allowsNullCharacter: true)
        for entry in cases {
            let input = try #require(entry["text"].flatMap { $0.stringValue.map { Array($0.utf8) } } ?? entry["hex"]?.stringValue.map(bytes))
            #expect(outcome(input, JSONLimits()) == entry["default"], "\(entry)")
            #expect(outcome(input, small) == entry["small"], "\(entry)")
        }
    }

    private func outcome(_ input: [UInt8], _ limits: JSONLimits) -> JSON {
        do throws(JSONParseError) {
            let value = try JSON(parsing: input, limits: limits)
            // The text and the bytes are made by the same writer: both must match.
            #expect(Array(value.serialized().utf8) == value.serializedBytes())
            return ["canonical": .string(value.serialized())]
        } catch {
            return ["error": .string(error.message), "kind": .string("\(error.kind)")]
        }
    }

    private func bytes(_ hex: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }
}
