import Foundation
import Support
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

    /// An answer gives a cursor's text back only when it is exactly what `encode` makes now.
    @Test func canonicalOnlyForWhatEncodeMakes() {
        let cursor = Cursor.after(42, horizon: 7)
        let text = cursor.encode(partition: "agency=Gabon", key: key)
        #expect(Cursor.read(text, partition: "agency=Gabon", key: key).map { $0.cursor == cursor && $0.canonical } == true)
        // The same bytes written otherwise (padding, the other alphabet) still decode, but
        // are not what this server writes.
        for variant in [text + "=", "c:" + text.dropFirst(2).replacingOccurrences(of: "-", with: "+")
                            .replacingOccurrences(of: "_", with: "/")] where variant != text {
            #expect(Cursor.read(variant, partition: "agency=Gabon", key: key).map { $0.cursor == cursor && !$0.canonical } == true)
        }
        // A version 1 cursor (no horizon) decodes, and is written anew as version 2.
        var payload: [UInt8] = [1]
        withUnsafeBytes(of: Int64(42).bigEndian) { payload += $0 }
        payload += [1, UInt8(ascii: "~")]
        let old = "c:" + Crypto.base64url(payload + Cursor.mac(payload, partition: "agency=Gabon", key: key))
        #expect(Cursor.read(old, partition: "agency=Gabon", key: key).map { $0.cursor == .after(42) && !$0.canonical } == true)
    }
}
