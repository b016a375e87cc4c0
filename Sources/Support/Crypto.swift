import CSodium

/// The few cryptographic primitives Tideway uses, all from libsodium.
public enum Crypto {
    /// libsodium must be initialised once before use; `sodium_init` is safe to call again.
    public static let ready: Bool = sodium_init() >= 0

    public static func randomBytes(_ count: Int) -> [UInt8] {
        precondition(ready)
        var bytes = [UInt8](repeating: 0, count: count)
        randombytes_buf(&bytes, count)
        return bytes
    }

    /// A fresh opaque token: 32 random bytes, base64url without padding.
    public static func newToken() -> String { base64url(randomBytes(32)) }

    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        crypto_hash_sha256(&out, bytes, UInt64(bytes.count))
        return out
    }

    public static func sha256(_ text: String) -> [UInt8] { sha256(Array(text.utf8)) }

    public static func hmacSHA256(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var state = crypto_auth_hmacsha256_state()
        var out = [UInt8](repeating: 0, count: Int(crypto_auth_hmacsha256_BYTES))
        crypto_auth_hmacsha256_init(&state, key, key.count)
        crypto_auth_hmacsha256_update(&state, message, UInt64(message.count))
        crypto_auth_hmacsha256_final(&state, &out)
        return out
    }

    /// Compares in time independent of where the bytes differ.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.count == b.count && sodium_memcmp(a, b, a.count) == 0
    }

    /// argon2id, libsodium's "interactive" cost (64 MiB, 2 passes): the `$argon2id$...` string.
    public static func hashPassword(_ password: String) -> String {
        precondition(ready)
        var out = [CChar](repeating: 0, count: tw_pwhash_strbytes())
        let length = UInt64(password.utf8.count)
        let status = password.withCString {
            crypto_pwhash_str(&out, $0, length, tw_pwhash_opslimit(), tw_pwhash_memlimit())
        }
        precondition(status == 0, "argon2id: out of memory")
        return String(cString: out)
    }

    public static func verifyPassword(_ password: String, hash: String) -> Bool {
        let length = UInt64(password.utf8.count)
        return password.withCString { crypto_pwhash_str_verify(hash, $0, length) == 0 }
    }

    // MARK: encodings

    public static func hex(_ bytes: [UInt8]) -> String {
        let digits: [Character] = Array("0123456789abcdef")
        var s = ""
        s.reserveCapacity(bytes.count * 2)
        for b in bytes {
            s.append(digits[Int(b >> 4)])
            s.append(digits[Int(b & 15)])
        }
        return s
    }

    public static func base64url(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 2 < bytes.count {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], alphabet[Int(n & 63)]]
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let n = UInt32(bytes[i]) << 16
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)]]
        } else if rest == 2 {
            let n = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)]]
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes base64url (no padding) or standard base64 (with or without padding); nil if malformed.
    public static func base64Decode(_ text: some StringProtocol) -> [UInt8]? {
        // In one pass over the text's bytes where they lie (every pull decodes its cursors:
        // a character at a time, through an array of values, was 2% of an idle poll's worker CPU).
        if let decoded = text.utf8.withContiguousStorageIfAvailable({ base64Decode(bytes: $0) }) { return decoded }
        return Array(text.utf8).withUnsafeBufferPointer { base64Decode(bytes: $0) }
    }

    /// Each byte's value in base64 (both alphabets): 254 for `=` (skipped), 255 for any other.
    private static let base64Values: [UInt8] = {
        var table = [UInt8](repeating: 255, count: 256)
        for (index, byte) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8.enumerated() {
            table[Int(byte)] = UInt8(index)
        }
        table[Int(UInt8(ascii: "+"))] = 62
        table[Int(UInt8(ascii: "-"))] = 62
        table[Int(UInt8(ascii: "/"))] = 63
        table[Int(UInt8(ascii: "_"))] = 63
        table[Int(UInt8(ascii: "="))] = 254
        return table
    }()

    private static func base64Decode(bytes input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        base64Values.withUnsafeBufferPointer { table -> [UInt8]? in
            var malformed = false
            let out = [UInt8](unsafeUninitializedCapacity: input.count / 4 * 3 + 3) { buffer, written in
                var bits: UInt32 = 0, held = 0, at = 0
                for byte in input {
                    let value = table[Int(byte)]
                    if value == 254 { continue }
                    if value == 255 {
                        malformed = true
                        break
                    }
                    bits = bits << 6 | UInt32(value)
                    held += 1
                    if held == 4 {
                        buffer[at] = UInt8(bits >> 16 & 255)
                        buffer[at + 1] = UInt8(bits >> 8 & 255)
                        buffer[at + 2] = UInt8(bits & 255)
                        at += 3
                        bits = 0
                        held = 0
                    }
                }
                // What is left: 2 values hold one byte, 3 hold two; 1 cannot be.
                switch held {
                case 1: malformed = true
                case 2:
                    buffer[at] = UInt8(bits >> 4 & 255)
                    at += 1
                case 3:
                    buffer[at] = UInt8(bits >> 10 & 255)
                    buffer[at + 1] = UInt8(bits >> 2 & 255)
                    at += 2
                default: break
                }
                written = malformed ? 0 : at
            }
            return malformed ? nil : out
        }
    }
}
