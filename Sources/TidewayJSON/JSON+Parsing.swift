extension JSON {
    /// Parses one strict RFC 8259 JSON text from UTF-8 bytes.
    public init(parsing bytes: UnsafeRawBufferPointer, limits: JSONLimits = .init()) throws(JSONParseError) {
        var parser = JSONParser(bytes: bytes.assumingMemoryBound(to: UInt8.self), limits: limits)
        self = try parser.parseDocument()
    }

    /// Parses one strict RFC 8259 JSON text from UTF-8 bytes (`[UInt8]`, `ArraySlice`, `Data` ...).
    public init(parsing bytes: some Collection<UInt8>, limits: JSONLimits = .init()) throws(JSONParseError) {
        // Closures handed to `withContiguousStorageIfAvailable` cannot throw a typed error through
        // it, so the outcome travels as a Result.
        let parse = { (buffer: UnsafeBufferPointer<UInt8>) -> Result<JSON, JSONParseError> in
            var parser = JSONParser(bytes: buffer, limits: limits)
            do throws(JSONParseError) { return .success(try parser.parseDocument()) } catch { return .failure(error) }
        }
        let outcome = bytes.withContiguousStorageIfAvailable(parse) ?? Array(bytes).withUnsafeBufferPointer(parse)
        self = try outcome.get()
    }

    /// Parses one strict RFC 8259 JSON text.
    public init(parsing text: String, limits: JSONLimits = .init()) throws(JSONParseError) {
        var text = text
        text.makeContiguousUTF8()
        try self.init(parsing: text.utf8, limits: limits)
    }
}

/// A recursive-descent parser over raw UTF-8 bytes. Recursion is bounded by `limits.maxDepth`,
/// which is what keeps a hostile `[[[[...` from overflowing a worker thread's stack.
struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    let limits: JSONLimits
    var position = 0
    /// Reused between escaped strings so that decoding them does not allocate each time.
    var scratch: [UInt8] = []
    /// The fields of the objects being parsed, innermost last (`parseObject`).
    var pairs: [(key: String, value: JSON)] = []
    /// Where each of `pairs`' keys is: its quote's `offset` in the input; `raw`, its byte count
    /// when it has no escape (its bytes are the input's after the quote), -1 when it has.
    /// Apart from `pairs` so that comparing keys copies (and retains) nothing.
    var keys: [(offset: Int, raw: Int, ascii: Bool)] = []
    /// Reused by `makeObject`: positions in `pairs`, sorted.
    var order: [Int] = []
    /// Whether the last string `parseString` read was ASCII (false: unknown, after an escape).
    var lastStringASCII = false
    /// The elements of the arrays being parsed, innermost last (`parseArray`).
    var elements: [JSON] = []

    init(bytes: UnsafeBufferPointer<UInt8>, limits: JSONLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    mutating func parseDocument() throws(JSONParseError) -> JSON {
        skipWhitespace()
        let value = try parseValue(depth: 0)
        skipWhitespace()
        if position < bytes.count { throw unexpected("after the JSON value") }
        return value
    }

    // MARK: Values

    private mutating func parseValue(depth: Int) throws(JSONParseError) -> JSON {
        guard position < bytes.count else { throw JSONParseError(.syntax, "unexpected end of input", at: position) }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw unexpected("where a value was expected")
        }
    }

    /// The fields are gathered on `pairs` and the object made at the `}`: sorted into the
    /// canonical order once (docs/performance/round-20.md, "The tree's shape changed"),
    /// after a duplicate key is looked for. A duplicate key is reported as before, the first one
    /// in the text, even when a later error stops the object.
    private mutating func parseObject(depth: Int) throws(JSONParseError) -> JSON {
        try checkDepth(depth)
        position += 1  // {
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            position += 1
            return .object([:])
        }
        let base = pairs.count
        // One removeLast() at a time: removeLast(n) and removeSubrange go through the generic
        // replaceSubrange (4% of the worker's CPU per document in pushes of 25, round 19).
        defer {
            while pairs.count > base {
                pairs.removeLast()
                keys.removeLast()
            }
        }
        do throws(JSONParseError) {
            try parseFields(depth: depth)
        } catch {
            try checkDuplicates(from: base)
            throw error
        }
        return .object(try makeObject(from: base))
    }

    /// The fields of an object, up to and including its `}`, onto `pairs`.
    private mutating func parseFields(depth: Int) throws(JSONParseError) {
        while true {
            guard peek() == UInt8(ascii: "\"") else { throw unexpected("where an object key was expected") }
            let keyOffset = position
            let key = try parseString()
            // An escape always takes more bytes than what it stands for.
            let raw = key.utf8.count == position - keyOffset - 2 ? key.utf8.count : -1
            let ascii = lastStringASCII || JSONObject.isASCII(key)
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else { throw unexpected("where ':' was expected") }
            position += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            pairs.append((key, value))
            keys.append((keyOffset, raw, ascii))
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","):
                position += 1
                skipWhitespace()  // a '}' here is a trailing comma: the key check above refuses it
            case UInt8(ascii: "}"):
                position += 1
                return
            default:
                throw unexpected("where ',' or '}' was expected")
            }
        }
    }

    /// The object of `pairs[base...]`; the first repeated key is an error. Fields in order
    /// already (a canonical text's) cost one comparison each; others are sorted by position, the
    /// keys compared on the input's bytes where they have no escape.
    private mutating func makeObject(from base: Int) throws(JSONParseError) -> JSONObject {
        let end = pairs.count
        var ascii = true
        var sorted = true
        for index in base..<end {
            if !keys[index].ascii { ascii = false }
            if sorted && index > base && keyOrder(index - 1, index) >= 0 { sorted = false }
        }
        // Keys `==` with other bytes (canonical equivalence) are neither adjacent once sorted
        // nor out of order.
        if !ascii { try checkDuplicates(from: base) }
        var fields: [JSONObject.Field] = []
        fields.reserveCapacity(end - base)
        if sorted {
            for index in base..<end { fields.append(JSONObject.Field(key: pairs[index].key, value: pairs[index].value)) }
            return JSONObject(sortedFields: fields, hasNonASCIIKey: !ascii)
        }
        // Taken out of `self` while sorted by what `self` holds, and put back for the next object.
        var order = self.order
        self.order = []
        defer { self.order = order }
        order.removeAll(keepingCapacity: true)
        order.append(contentsOf: base..<end)
        // Equal keys in the text's order, so that a run's second is its second in the text.
        func precedes(_ left: Int, _ right: Int) -> Bool {
            let keys = keyOrder(left, right)
            return keys < 0 || keys == 0 && left < right
        }
        if end - base <= 32 {
            // Insertion sort: an object's few fields, mostly in runs already (jsonb's order).
            for next in 1..<order.count {
                let moving = order[next]
                var slot = next
                while slot > 0 && precedes(moving, order[slot - 1]) {
                    order[slot] = order[slot - 1]
                    slot -= 1
                }
                order[slot] = moving
            }
        } else {
            order.sort(by: precedes)
        }
        // The first repeated in the text is the least offset among each run's second.
        var repeated: Int? = nil
        for next in 1..<order.count where keyOrder(order[next - 1], order[next]) == 0
            && (next == 1 || keyOrder(order[next - 2], order[next]) != 0)
            && keys[order[next]].offset < (repeated.map { keys[$0].offset } ?? Int.max) {
            repeated = order[next]
        }
        if let repeated { throw duplicate(pairs[repeated].key, at: keys[repeated].offset) }
        for index in order { fields.append(JSONObject.Field(key: pairs[index].key, value: pairs[index].value)) }
        return JSONObject(sortedFields: fields, hasNonASCIIKey: !ascii)
    }

    /// The order of the keys of `pairs[left]` and `pairs[right]` (`JSONObject.compare`).
    private func keyOrder(_ left: Int, _ right: Int) -> Int {
        let leftCount = keys[left].raw, rightCount = keys[right].raw
        guard leftCount >= 0 && rightCount >= 0 else { return JSONObject.compare(pairs[left].key, pairs[right].key) }
        let leftStart = keys[left].offset + 1, rightStart = keys[right].offset + 1
        for index in 0..<min(leftCount, rightCount) {
            let l = bytes[leftStart + index], r = bytes[rightStart + index]
            if l != r { return Int(l) - Int(r) }
        }
        return leftCount - rightCount
    }

    /// The first key of `pairs[base...]` repeated in the text (as `==` compares keys), as an error.
    private func checkDuplicates(from base: Int) throws(JSONParseError) {
        var seen = Set<String>(minimumCapacity: pairs.count - base)
        for index in base..<pairs.count where !seen.insert(pairs[index].key).inserted {
            throw duplicate(pairs[index].key, at: keys[index].offset)
        }
    }

    private func duplicate(_ key: String, at offset: Int) -> JSONParseError {
        JSONParseError(.syntax, "duplicate object key \"\(key)\"", at: offset)
    }

    /// The elements are gathered on `elements` and the array made at the `]` at its size: grown
    /// one append at a time, an array of n elements was allocated and copied ~log2(n) + 1 times.
    private mutating func parseArray(depth: Int) throws(JSONParseError) -> JSON {
        try checkDepth(depth)
        position += 1  // [
        skipWhitespace()
        if peek() == UInt8(ascii: "]") {
            position += 1
            return .array([])
        }
        let base = elements.count
        defer { while elements.count > base { elements.removeLast() } }
        while true {
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","):
                position += 1
                skipWhitespace()
                if peek() == UInt8(ascii: "]") { throw unexpected("(trailing comma)") }
            case UInt8(ascii: "]"):
                position += 1
                return .array(Array(elements[base...]))
            default:
                throw unexpected("where ',' or ']' was expected")
            }
        }
    }

    private func checkDepth(_ depth: Int) throws(JSONParseError) {
        if depth > limits.maxDepth {
            throw JSONParseError(.tooDeep, "nesting deeper than \(limits.maxDepth)", at: position)
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        let expected = UnsafeBufferPointer(start: literal.utf8Start, count: count)
        guard bytes.count - position >= count, bytes[position..<position + count].elementsEqual(expected) else {
            throw unexpected("where a value was expected")
        }
        position += count
    }

    // MARK: Numbers

    /// RFC 8259 grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`. Integers that fit
    /// Int64 stay exact; everything else becomes a Double, and one that overflows to infinity is refused
    /// (a JSON value never holds a non-finite number).
    private mutating func parseNumber() throws(JSONParseError) -> JSON {
        let start = position
        let negative = bytes[position] == UInt8(ascii: "-")
        if negative { position += 1 }

        // Accumulate negatively so that Int64.min parses without overflow.
        var accumulator: Int64 = 0
        var fitsInt64 = true
        guard let first = peek(), isDigit(first) else { throw unexpected("in a number (digit expected)") }
        if first == UInt8(ascii: "0") {
            position += 1
            if let next = peek(), isDigit(next) { throw unexpected("in a number (leading zero)") }
        } else {
            while let byte = peek(), isDigit(byte) {
                if fitsInt64 {
                    let (times10, o1) = accumulator.multipliedReportingOverflow(by: 10)
                    let (next, o2) = times10.subtractingReportingOverflow(Int64(byte &- UInt8(ascii: "0")))
                    if o1 || o2 { fitsInt64 = false } else { accumulator = next }
                }
                position += 1
            }
        }

        var isInteger = true
        if peek() == UInt8(ascii: ".") {
            isInteger = false
            position += 1
            try skipDigits(what: "after the decimal point")
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            isInteger = false
            position += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { position += 1 }
            try skipDigits(what: "in the exponent")
        }

        if isInteger && fitsInt64 {
            if negative { return .int(accumulator) }
            if accumulator != .min { return .int(-accumulator) }
        }
        // The grammar is already checked, so Double's own (more lenient) parser only sees valid text.
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw JSONParseError(.syntax, "number out of range", at: start)
        }
        return .double(value)
    }

    private mutating func skipDigits(what: String) throws(JSONParseError) {
        guard let byte = peek(), isDigit(byte) else { throw unexpected("\(what) (digit expected)") }
        while let byte = peek(), isDigit(byte) { position += 1 }
    }

    @inline(__always) private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    // MARK: Helpers

    @inline(__always) func peek() -> UInt8? {
        position < bytes.count ? bytes[position] : nil
    }

    @inline(__always) private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x0A, 0x0D, 0x09: position += 1
            default: return
            }
        }
    }

    func unexpected(_ context: String) -> JSONParseError {
        guard position < bytes.count else {
            return JSONParseError(.syntax, "unexpected end of input \(context)", at: position)
        }
        let byte = bytes[position]
        let shown = byte >= 0x20 && byte < 0x7F ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
        return JSONParseError(.syntax, "unexpected \(shown) \(context)", at: position)
    }
}
