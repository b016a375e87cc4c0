import Testing

@testable import Support

@Suite struct CryptoTests {
    /// Every length's tail (0, 1 and 2 bytes past a group of three) and every byte value
    /// come back; padding is optional; anything outside the two alphabets is refused.
    @Test func base64DecodesWhatBase64URLEncodes() {
        let bytes = (0..<256).map { UInt8($0) }
        for count in [0, 1, 2, 3, 4, 5, 31, 32, 33, 256] {
            let encoded = Crypto.base64url(Array(bytes.prefix(count)))
            #expect(Crypto.base64Decode(encoded) == Array(bytes.prefix(count)))
        }
        #expect(Crypto.base64Decode("+/8=") == [0xFB, 0xFF])
        #expect(Crypto.base64Decode("-_8") == [0xFB, 0xFF])
        #expect(Crypto.base64Decode("AAA") == [0, 0])
        #expect(Crypto.base64Decode("A") == nil)
        #expect(Crypto.base64Decode("AA.A") == nil)
        // Padding anywhere is skipped, as before; a byte outside ASCII is refused.
        #expect(Crypto.base64Decode("+/=8") == [0xFB, 0xFF])
        #expect(Crypto.base64Decode("AAé") == nil)
        #expect(Crypto.base64Decode("AAA\u{FF}") == nil)
        // A cursor's text after its prefix: a substring, decoded where its bytes lie.
        let full = Array(bytes.prefix(47))
        #expect(Crypto.base64Decode(("c:" + Crypto.base64url(full)).dropFirst(2)) == full)
    }
}
