import Testing

@testable import Sync

@Suite struct CursorTests {
    let key = Array(repeating: UInt8(7), count: 32)

    @Test func roundTrips() {
        let cursor = Cursor(seq: 123_456_789, collection: "reports", id: "64b0c0ffee")
        let text = cursor.encode(partition: "agency=Gabon", key: key)
        #expect(text.hasPrefix("c:"))
        #expect(Cursor.decode(text, partition: "agency=Gabon", key: key) == cursor)
        #expect(Cursor.decode(Cursor.after(9).encode(partition: "p=1", key: key), partition: "p=1", key: key) == .after(9))
    }

    @Test func refusesForgedForeignAndGarbage() {
        let text = Cursor(seq: 5).encode(partition: "agency=Gabon", key: key)
        #expect(Cursor.decode(text, partition: "agency=WildAid", key: key) == nil)
        #expect(Cursor.decode(text, partition: "agency=Gabon", key: Array(repeating: 8, count: 32)) == nil)
        var bytes = Array(text.utf8)
        bytes[6] = bytes[6] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(Cursor.decode(String(decoding: bytes, as: UTF8.self), partition: "agency=Gabon", key: key) == nil)
        for garbage in ["", "c:", "c:!!!", "x:" + text.dropFirst(2), String(repeating: "c:AAAA", count: 200)] {
            #expect(Cursor.decode(garbage, partition: "agency=Gabon", key: key) == nil)
        }
    }
}
