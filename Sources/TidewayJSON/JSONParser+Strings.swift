/// String literals: the hot path of real documents, so the common case (no escapes) is one scan
/// and one copy straight from the input bytes, validated once.
extension JSONParser {
    mutating func parseString() throws(JSONParseError) -> String {
        let open = position
        position += 1  // "
        let start = position
        // The bits of every byte, or'ed: below 0x80, the string is ASCII and needs no UTF-8
        // validation (the generic `String(validating:as:)` looked up type metadata for every
        // string: 5% of a push's worker CPU).
        var seen: UInt8 = 0
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                try checkLength(position - start, stringAt: open)
                let utf8 = UnsafeBufferPointer(rebasing: bytes[start..<position])
                lastStringASCII = seen < 0x80
                let text = lastStringASCII ? Self.makeASCIIString(utf8) : try makeString(utf8, stringAt: open)
                position += 1
                return text
            }
            seen |= byte
            if byte == UInt8(ascii: "\\") { return try parseEscapedString(open: open, start: start) }
            if byte < 0x20 { throw controlCharacter(byte) }
            position += 1
        }
        throw JSONParseError(.syntax, "unterminated string", at: open)
    }

    /// Slow path, entered at the first backslash: decodes into `scratch`, copying unescaped runs whole.
    private mutating func parseEscapedString(open: Int, start: Int) throws(JSONParseError) -> String {
        lastStringASCII = false
        scratch.removeAll(keepingCapacity: true)
        var runStart = start
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<position]))
                try checkLength(scratch.count, stringAt: open)
                let text = try scratch.withUnsafeBufferPointer { (decoded) throws(JSONParseError) in
                    try makeString(decoded, stringAt: open)
                }
                position += 1
                return text
            }
            if byte < 0x20 { throw controlCharacter(byte) }
            if byte != UInt8(ascii: "\\") {
                position += 1
                continue
            }
            scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<position]))
            try decodeEscape()
            try checkLength(scratch.count, stringAt: open)
            runStart = position
        }
        throw JSONParseError(.syntax, "unterminated string", at: open)
    }

    /// Decodes one escape sequence at `position` (the backslash) into `scratch`.
    private mutating func decodeEscape() throws(JSONParseError) {
        let escapeStart = position
        position += 1
        guard let letter = peek() else { throw JSONParseError(.syntax, "unterminated string", at: escapeStart) }
        position += 1
        switch letter {
        case UInt8(ascii: "\""): scratch.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): scratch.append(UInt8(ascii: "\\"))
        case UInt8(ascii: "/"): scratch.append(UInt8(ascii: "/"))
        case UInt8(ascii: "b"): scratch.append(0x08)
        case UInt8(ascii: "f"): scratch.append(0x0C)
        case UInt8(ascii: "n"): scratch.append(0x0A)
        case UInt8(ascii: "r"): scratch.append(0x0D)
        case UInt8(ascii: "t"): scratch.append(0x09)
        case UInt8(ascii: "u"): try decodeUnicodeEscape(escapeStart: escapeStart)
        default: throw JSONParseError(.syntax, "invalid escape sequence", at: escapeStart)
        }
    }

    /// `\uXXXX`, where a UTF-16 high surrogate must be followed by `\uXXXX` holding a low one.
    private mutating func decodeUnicodeEscape(escapeStart: Int) throws(JSONParseError) {
        let unit = try readHex4(escapeStart: escapeStart)
        var scalarValue = UInt32(unit)
        switch unit {
        case 0xD800...0xDBFF:
            guard bytes.count - position >= 6, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u")
            else { throw JSONParseError(.syntax, "lone UTF-16 surrogate in \\u escape", at: escapeStart) }
            position += 2
            let low = try readHex4(escapeStart: escapeStart)
            guard (0xDC00...0xDFFF).contains(low) else {
                throw JSONParseError(.syntax, "lone UTF-16 surrogate in \\u escape", at: escapeStart)
            }
            scalarValue = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
        case 0xDC00...0xDFFF:
            throw JSONParseError(.syntax, "lone UTF-16 surrogate in \\u escape", at: escapeStart)
        case 0 where !limits.allowsNullCharacter:
            throw JSONParseError(.syntax, "\\u0000 is not accepted", at: escapeStart)
        default:
            break
        }
        // Surrogates are excluded above, so every remaining value is a valid scalar.
        for byte in UTF8.encode(Unicode.Scalar(scalarValue)!)! { scratch.append(byte) }
    }

    private mutating func readHex4(escapeStart: Int) throws(JSONParseError) -> UInt16 {
        guard bytes.count - position >= 4 else { throw JSONParseError(.syntax, "invalid \\u escape", at: escapeStart) }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw JSONParseError(.syntax, "invalid \\u escape", at: escapeStart)
            }
            value = value << 4 | UInt16(digit)
            position += 1
        }
        return value
    }

    private func checkLength(_ decodedBytes: Int, stringAt open: Int) throws(JSONParseError) {
        if decodedBytes > limits.maxStringBytes {
            throw JSONParseError(.stringTooLong, "string longer than \(limits.maxStringBytes) bytes", at: open)
        }
    }

    /// Bytes this scan has seen are all below 0x80: made into a String without the check again
    /// that `String(decoding:)` makes (`_fromUTF8Repairing`, `_allASCII`: ~3% of the JSON's
    /// time in process, docs/performance/round-21.md).
    @inline(__always) private static func makeASCIIString(_ utf8: UnsafeBufferPointer<UInt8>) -> String {
        String(copying: unsafe UTF8Span(unchecked: utf8.span, isKnownASCII: true))
    }

    /// RFC 8259 requires UTF-8; bytes outside strings are refused by the grammar, so validating
    /// string contents is enough to refuse any ill-formed input.
    private func makeString(_ utf8: UnsafeBufferPointer<UInt8>, stringAt open: Int) throws(JSONParseError) -> String {
        guard let text = String(validating: utf8, as: UTF8.self) else {
            throw JSONParseError(.syntax, "invalid UTF-8 in string", at: open)
        }
        return text
    }

    private func controlCharacter(_ byte: UInt8) -> JSONParseError {
        JSONParseError(.syntax, "unescaped control character 0x\(String(byte, radix: 16)) in string", at: position)
    }
}
