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
        var values: [UInt8] = []
        values.reserveCapacity(text.utf8.count)
        for c in text.utf8 {
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): values.append(c - 65)
            case UInt8(ascii: "a")...UInt8(ascii: "z"): values.append(c - 97 + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): values.append(c - 48 + 52)
            case UInt8(ascii: "+"), UInt8(ascii: "-"): values.append(62)
            case UInt8(ascii: "/"), UInt8(ascii: "_"): values.append(63)
            case UInt8(ascii: "="): continue
            default: return nil
            }
        }
        if values.count % 4 == 1 { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(values.count * 3 / 4)
        var i = 0
        while i + 3 < values.count {
            let n = UInt32(values[i]) << 18 | UInt32(values[i + 1]) << 12 | UInt32(values[i + 2]) << 6 | UInt32(values[i + 3])
            // Three appends, not an array of three per group (an allocation each).
            out.append(UInt8(n >> 16 & 255))
            out.append(UInt8(n >> 8 & 255))
            out.append(UInt8(n & 255))
            i += 4
        }
        let rest = values.count - i
        if rest == 2 {
            out.append(UInt8((UInt32(values[i]) << 18 | UInt32(values[i + 1]) << 12) >> 16 & 255))
        } else if rest == 3 {
            let n = UInt32(values[i]) << 18 | UInt32(values[i + 1]) << 12 | UInt32(values[i + 2]) << 6
            out += [UInt8(n >> 16 & 255), UInt8(n >> 8 & 255)]
        }
        return out
    }
}
