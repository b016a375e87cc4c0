import Foundation
import Testing
import TidewayJSON

@testable import TidewayImport

/// The BSON and Extended JSON readers (issue 18): the specification's examples, every
/// type Realm apps write, both Extended JSON modes and both file layouts, and broken input.
@Suite struct ReaderTests {
    /// bsonspec.org's first example: {"hello": "world"}.
    static let hello: [UInt8] = [0x16, 0, 0, 0, 0x02] + Array("hello".utf8) + [0, 6, 0, 0, 0] + Array("world".utf8) + [0, 0]

    /// A document built by hand: element bytes between the length and the final zero.
    static func document(_ elements: [UInt8]) -> [UInt8] {
        let length = UInt32(elements.count + 5)
        return withUnsafeBytes(of: length.littleEndian) { Array($0) } + elements + [0]
    }

    static func element(_ type: UInt8, _ name: String, _ payload: [UInt8]) -> [UInt8] {
        [type] + Array(name.utf8) + [0] + payload
    }

    static func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }

    @Test func specificationExample() throws {
        #expect(try BSONReader.document(Self.hello) == .document(["hello": .string("world")]))
    }

    @Test func everyTypeRealmWrites() throws {
        let inner = Self.document(Self.element(0x10, "n", Self.le(Int32(-7))))
        let array = Self.document(Self.element(0x02, "0", Self.le(Int32(2)) + [0x61, 0]) + Self.element(0x08, "1", [1]))
        let oid: [UInt8] = [0x5e, 0x5e, 0x43, 0x13, 0x14, 0x6b, 0x99, 0x45, 0x6f, 0xf1, 0x2e, 0x6e]
        var decimalBytes = Self.le(UInt64(12)) + Self.le(UInt64(0x303E_0000_0000_0000))
        let elements = Self.element(0x01, "d", Self.le(Double(12.5).bitPattern))
            + Self.element(0x03, "doc", inner) + Self.element(0x04, "arr", array)
            + Self.element(0x05, "bin", Self.le(Int32(3)) + [0, 1, 2, 3])
            + Self.element(0x07, "_id", oid) + Self.element(0x08, "f", [0])
            + Self.element(0x09, "when", Self.le(Int64(1_585_145_619_123))) + Self.element(0x0A, "nothing", [])
            + Self.element(0x11, "ts", Self.le(UInt64(5) << 32 | 1)) + Self.element(0x12, "big", Self.le(Int64(1) << 40))
            + Self.element(0x13, "dec", decimalBytes)
        decimalBytes = []
        let value = try BSONReader.document(Self.document(elements))
        #expect(value["d"] == .double(12.5))
        #expect(value["doc"] == .document(["n": .int32(-7)]))
        #expect(value["arr"] == .array([.string("a"), .bool(true)]))
        #expect(value["bin"] == .binary(subtype: 0, bytes: [1, 2, 3]))
        #expect(value["_id"] == .objectID("5e5e4313146b99456ff12e6e"))
        #expect(value["f"] == .bool(false))
        #expect(value["when"] == .date(1_585_145_619_123))
        #expect(value["nothing"] == .null)
        #expect(value["ts"] == .timestamp(seconds: 5, increment: 1))
        #expect(value["big"] == .int64(1 << 40))
        #expect(value["dec"] == .decimal128("1.2"))
        let json = Mapping.json(value)
        #expect(json["when"] == .string("2020-03-25T14:13:39.123Z"))
        #expect(json["_id"] == .string("5e5e4313146b99456ff12e6e"))
        #expect(json["bin"] == .string("AQID"))
    }

    /// The BSON corpus's decimal128 strings.
    @Test(arguments: [
        (UInt64(0x3040_0000_0000_0000), UInt64(0), "0"),
        (0x3040_0000_0000_0000, 1, "1"),
        (0xB040_0000_0000_0000, 1, "-1"),
        (0x303E_0000_0000_0000, 12, "1.2"),
        (0x3046_0000_0000_0000, 12, "1.2E+4"),
        (0x3034_0000_0000_0000, 1234, "0.001234"),
        (0x3022_0000_0000_0000, 1, "1E-15"),
        (0x7C00_0000_0000_0000, 0, "NaN"),
        (0xF800_0000_0000_0000, 0, "-Infinity"),
    ])
    func decimal128(high: UInt64, low: UInt64, text: String) {
        #expect(Decimal128.string(low: low, high: high) == text)
    }

    @Test func truncatedFileKeepsTheDocumentsBefore() {
        let file = Self.hello + Self.hello + Array(Self.hello.prefix(10))
        let output = BSONReader.documents(in: file)
        #expect(output.documents.count == 2)
        #expect(output.errors.count == 1)
        #expect(output.errors.first?.document == 2)
        #expect(output.errors.first?.message.contains("truncated") == true)
    }

    @Test func brokenDocumentIsRefusedAloneAndTheNextIsRead() {
        var broken = Self.hello
        broken[4] = 0x0E  // a min-key where a string was: not a type Realm writes
        let output = BSONReader.documents(in: broken + Self.hello)
        #expect(output.documents.map(\.index) == [1])
        #expect(output.errors.first?.document == 0)
    }

    @Test func nestingIsBounded() {
        var doc = Self.document([])
        for _ in 0..<150 { doc = Self.document(Self.element(0x03, "x", doc)) }
        #expect(BSONReader.documents(in: doc).errors.first?.message.contains("nested") == true)
    }

    @Test func canonicalAndRelaxedExtendedJSONReadAlike() throws {
        let canonical = """
            {"_id":{"$oid":"5E5E4313146B99456FF12E6E"},"n":{"$numberInt":"3"},"l":{"$numberLong":"1099511627776"},\
             "w":{"$numberDouble":"12.5"},"d":{"$date":{"$numberLong":"1585145619123"}},"dec":{"$numberDecimal":"1.2"},\
             "b":{"$binary":{"base64":"AQID","subType":"00"}},"ok":true,"none":null,"list":[{"$numberInt":"1"},"a"]}
            """
        let relaxed = """
            {"_id":{"$oid":"5e5e4313146b99456ff12e6e"},"n":3,"l":1099511627776,"w":12.5,"d":{"$date":"2020-03-25T14:13:39.123Z"},
             "dec":{"$numberDecimal":"1.2"},"b":{"$binary":"AQID","$type":"00"},"ok":true,"none":null,"list":[1,"a"]}
            """
        let a = ExtendedJSONReader.documents(in: Array(canonical.utf8))
        let b = ExtendedJSONReader.documents(in: Array(("[" + relaxed + "]").utf8))
        #expect(a.errors.isEmpty && b.errors.isEmpty)
        #expect(a.documents.first?.value == b.documents.first?.value)
        #expect(a.documents.first?.value["l"] == .int64(1 << 40))
        #expect(a.documents.first?.value["d"] == .date(1_585_145_619_123))
    }

    @Test func jsonLinesNameTheBadLine() {
        let text = "{\"a\":1}\n\n{\"b\":{\"$oid\":\"xyz\"}}\n{\"c\":\n{\"d\":2}\n"
        let output = ExtendedJSONReader.documents(in: Array(text.utf8))
        #expect(output.documents.count == 2)
        #expect(output.errors.map(\.location) == ["line 3", "line 4"])
        #expect(output.errors.first?.message.contains("$oid") == true)
    }

    @Test func isoDatesBothWays() {
        #expect(ISODate.millis("2020-03-25T14:13:39.123Z") == 1_585_145_619_123)
        #expect(ISODate.millis("2020-03-25T16:13:39.123+02:00") == 1_585_145_619_123)
        #expect(ISODate.millis("2020-03-25") == nil)
        #expect(ISODate.string(millis: -1) == "1969-12-31T23:59:59.999Z")
        #expect(ISODate.string(millis: 0) == "1970-01-01T00:00:00.000Z")
    }

    @Test func gzipRoundTrip() throws {
        // `gzip -c` of "hello\n", two members back to back.
        let member: [UInt8] = [0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xcb, 0x48, 0xcd, 0xc9,
                               0xc9, 0xe7, 0x02, 0x00, 0x20, 0x30, 0x3a, 0x36, 0x06, 0x00, 0x00, 0x00]
        #expect(try Gzip.inflate(member + member) == Array("hello\nhello\n".utf8))
        #expect(throws: ImportError.self) { try Gzip.inflate(Array(member.prefix(15))) }
    }

    @Test func driftRules() throws {
        let doc: JSON = ["_id": "r1", "timestamp": "2024-05-01T10:00:00Z", "date": "", "webOnly": "x",
                         "inspection": ["actualCatch": [["fish": "Tuna", "number": .double(3), "weight": "12.5", "unit": "kg"]]]]
        let (fitted, adjustments) = try Mapping.fit(doc, collection: .reports, strict: false).get()
        #expect(fitted["date"] == nil && fitted["webOnly"] == nil)
        #expect(fitted["inspection"]?["actualCatch"]?.arrayValue?.first?["number"] == .int(3))
        #expect(fitted["inspection"]?["actualCatch"]?.arrayValue?.first?["weight"] == .double(12.5))
        #expect(Set(adjustments.map(\.rule)) == ["empty-as-missing", "extra-field", "numeric-string"])
        guard case .failure(let refusal) = Mapping.fit(doc, collection: .reports, strict: true) else {
            Issue.record("strict accepted an unknown field")
            return
        }
        #expect(refusal.path == "/webOnly")
        let duty: JSON = ["_id": "d1", "user": ["email": "a@b"], "date": "2024-05-01T10:00:00Z", "status": "At Sea"]
        #expect(try Mapping.fit(duty, collection: .dutyChanges, strict: true).get().0["status"] == "On Duty")
    }
}
