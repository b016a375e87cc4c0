import TidewayJSON

/// Walks a value and its schema together. Returns nil when the value is valid as it is, or the
/// normalized replacement, so that the common case (nothing to normalize) rebuilds nothing.
/// Stops at the first violation: one precise path helps a client more than a list of consequences.
///
/// `path` is the pointer to `value`, grown and shrunk in place as the walk goes down and up. A
/// new pointer per field, the keys and fields sorted per object and two lookups per key were
/// most of validating a pushed report (docs/performance/round-05.md, "The worker's CPU per pushed
/// document"); sorting is now for invalid objects only.
enum SchemaValidator {
    static func check(_ value: JSON, against schema: Schema, at path: inout JSONPointer) throws(SchemaViolation) -> JSON? {
        switch schema {
        case .string:
            _ = try expectString(value, at: path)
        case .identifier:
            let text = try expectString(value, at: path)
            // Characters are never more than UTF-8 bytes: counting them (grapheme breaking) only
            // when the bytes are over.
            if text.isEmpty || (text.utf8.count > 128 && text.count > 128) {
                throw SchemaViolation(at: path, "expected a non-empty string of at most 128 characters")
            }
        case .int, .nonNegativeInt:
            return try checkInteger(value, nonNegative: schema.isNonNegativeInt, at: path)
        case .number:
            if value.doubleValue == nil { throw mismatch("number", value, at: path) }
        case .bool:
            guard case .bool = value else { throw mismatch("boolean", value, at: path) }
        case .date:
            let text = try expectString(value, at: path)
            if !DateFormat.isZonedDateTime(text) {
                throw SchemaViolation(at: path, "expected an ISO 8601 date-time with a zone, like 2024-03-01T10:00:00Z")
            }
        case .oneOf(let allowed):
            let text = try expectString(value, at: path)
            if !allowed.contains(text) { throw notOneOf(allowed, at: path) }
        case .normalizedOneOf(let spellings):
            let text = try expectString(value, at: path)
            guard let canonical = spellings[text] else { throw notOneOf(spellings.keys.sorted(), at: path) }
            return canonical == text ? nil : .string(canonical)
        case .base64(let maxBytes):
            let text = try expectString(value, at: path)
            guard let decodedCount = Base64Format.decodedByteCount(text) else {
                throw SchemaViolation(at: path, "expected standard padded base64")
            }
            if let maxBytes, decodedCount > maxBytes {
                throw SchemaViolation(at: path, "base64 data larger than \(maxBytes) bytes")
            }
        case .hexColor:
            let text = try expectString(value, at: path)
            return try checkHexColor(text, at: path)
        case .array(let elementSchema):
            return try checkArray(value, of: elementSchema, at: &path)
        case .object(let fields):
            return try checkObject(value, fields: fields, at: &path)
        case .lonLat:
            try checkLonLat(value, at: path)
        case .ring:
            try checkRing(value, at: path)
        }
        return nil
    }

    /// Whether `check` would return nil for `value`: valid, and nothing to normalize. The
    /// usual document is; walked this way first, it keeps no pointer up to date per field and
    /// has nothing to unwind (docs/performance/round-13.md, "The worker's CPU per push, thirteenth
    /// round"). Anything else is walked again by `check`, which finds the violation or the
    /// normalized value. Scalars are `check`'s own answer.
    static func isValidAsIs(_ value: JSON, against schema: Schema) -> Bool {
        switch schema {
        case .array(let elementSchema):
            guard case .array(let elements) = value else { return false }
            return elements.allSatisfy { isValidAsIs($0, against: elementSchema) }
        case .object(let fields):
            guard case .object(let object) = value else { return false }
            // One merge of two lists in the same order (their keys' bytes): each key compared,
            // never hashed. A key `==` to a field's with other bytes (canonical equivalence) can
            // break the order: the merge then finds the object invalid, never valid when it is
            // not, and `check` decides as the lookups by key do.
            let schemaFields = fields.sorted
            var next = 0
            for (key, fieldValue) in object {
                while next < schemaFields.count && schemaFields[next].key != key {
                    if schemaFields[next].field.isRequired { return false }
                    next += 1
                }
                guard next < schemaFields.count else { return false }
                let field = schemaFields[next].field
                next += 1
                if case .null = fieldValue, !field.isRequired { continue }
                guard isValidAsIs(fieldValue, against: field.schema) else { return false }
            }
            return !schemaFields[next...].contains { $0.field.isRequired }
        default:
            var path = JSONPointer()
            do throws(SchemaViolation) {
                return try check(value, against: schema, at: &path) == nil
            } catch {
                return false
            }
        }
    }

    // MARK: Containers

    /// A valid object costs one lookup per key it has; an invalid one is walked again in key
    /// order (`checkInOrder`), which finds the violation to report.
    private static func checkObject(_ value: JSON, fields: Schema.Fields, at path: inout JSONPointer) throws(SchemaViolation) -> JSON? {
        guard case .object(let object) = value else { throw mismatch("object", value, at: path) }
        var normalized: JSONObject? = nil
        var requiredPresent = 0
        var valid = true
        for (key, fieldValue) in object {
            guard let field = fields[key] else {
                valid = false
                break
            }
            if field.isRequired { requiredPresent += 1 }
            // Realm-based clients write null for an optional value they do not have.
            if case .null = fieldValue, !field.isRequired { continue }
            path.append(key)
            defer { path.removeLast() }
            do throws(SchemaViolation) {
                if let replacement = try check(fieldValue, against: field.schema, at: &path) {
                    if normalized == nil { normalized = object }
                    normalized![key] = replacement
                }
            } catch {
                valid = false
                break
            }
        }
        if valid && requiredPresent == fields.requiredCount {
            return normalized.map(JSON.object)
        }
        return try checkInOrder(object, fields: fields, at: &path)
    }

    /// Keys and fields in sorted order, so that the violation reported for a document with
    /// several problems never varies.
    private static func checkInOrder(_ object: JSONObject, fields: Schema.Fields, at path: inout JSONPointer)
        throws(SchemaViolation) -> JSON?
    {
        for key in object.keys.sorted() where fields[key] == nil {
            throw SchemaViolation(at: path.appending(key), "unknown field")
        }
        var normalized: JSONObject? = nil
        for (key, field) in fields.sorted.sorted(by: { $0.key < $1.key }) {
            guard let fieldValue = object[key] else {
                if field.isRequired { throw SchemaViolation(at: path.appending(key), "required field missing") }
                continue
            }
            if fieldValue == .null && !field.isRequired { continue }
            path.append(key)
            defer { path.removeLast() }
            if let replacement = try check(fieldValue, against: field.schema, at: &path) {
                if normalized == nil { normalized = object }
                normalized![key] = replacement
            }
        }
        return normalized.map(JSON.object)
    }

    private static func checkArray(_ value: JSON, of elementSchema: Schema, at path: inout JSONPointer) throws(SchemaViolation) -> JSON? {
        guard case .array(let elements) = value else { throw mismatch("array", value, at: path) }
        var normalized: [JSON]? = nil
        for (index, element) in elements.enumerated() {
            path.append(index: index)
            defer { path.removeLast() }
            if let replacement = try check(element, against: elementSchema, at: &path) {
                if normalized == nil { normalized = elements }
                normalized![index] = replacement
            }
        }
        return normalized.map(JSON.array)
    }

    // MARK: Scalars

    private static func expectString(_ value: JSON, at path: JSONPointer) throws(SchemaViolation) -> String {
        guard case .string(let text) = value else { throw mismatch("string", value, at: path) }
        return text
    }

    private static func checkInteger(_ value: JSON, nonNegative: Bool, at path: JSONPointer) throws(SchemaViolation) -> JSON? {
        let integer: Int64
        switch value {
        case .int(let exact): integer = exact
        case .double(let approximate) where value.intValue != nil: integer = Int64(approximate)
        case .double: throw SchemaViolation(at: path, "expected integer, got fractional number")
        default: throw mismatch("integer", value, at: path)
        }
        if nonNegative && integer < 0 { throw SchemaViolation(at: path, "expected integer ≥ 0, got \(integer)") }
        return value == .int(integer) ? nil : .int(integer)
    }

    private static func checkHexColor(_ text: String, at path: JSONPointer) throws(SchemaViolation) -> JSON? {
        let digits = text.hasPrefix("#") ? text.utf8.dropFirst() : text.utf8[...]
        guard digits.count == 6, digits.allSatisfy({ $0.isHexDigit }) else {
            throw SchemaViolation(at: path, "expected a colour as #RRGGBB")
        }
        return text.hasPrefix("#") ? nil : .string("#" + text)
    }

    private static func checkLonLat(_ value: JSON, at path: JSONPointer) throws(SchemaViolation) {
        guard case .array(let pair) = value else { throw mismatch("[lon, lat] array", value, at: path) }
        guard pair.count == 2 else { throw SchemaViolation(at: path, "expected [lon, lat], got \(pair.count) numbers") }
        guard let lon = pair[0].doubleValue else { throw mismatch("number", pair[0], at: path.appending(index: 0)) }
        guard let lat = pair[1].doubleValue else { throw mismatch("number", pair[1], at: path.appending(index: 1)) }
        if !(-180...180).contains(lon) { throw SchemaViolation(at: path.appending(index: 0), "longitude outside [-180, 180]") }
        if !(-90...90).contains(lat) { throw SchemaViolation(at: path.appending(index: 1), "latitude outside [-90, 90]") }
    }

    private static func checkRing(_ value: JSON, at path: JSONPointer) throws(SchemaViolation) {
        guard case .array(let points) = value else { throw mismatch("array of [lon, lat] points", value, at: path) }
        for (index, point) in points.enumerated() { try checkLonLat(point, at: path.appending(index: index)) }
        if points.count < 4 { throw SchemaViolation(at: path, "a ring needs at least 4 points, got \(points.count)") }
        // Compared as numbers: [5, 1] closes a ring opened by [5.0, 1.0].
        if points.first!.arrayValue!.map(\.doubleValue) != points.last!.arrayValue!.map(\.doubleValue) {
            throw SchemaViolation(at: path.appending(index: points.count - 1), "a ring must end at its first point")
        }
    }

    // MARK: Messages

    private static func mismatch(_ expected: String, _ value: JSON, at path: JSONPointer) -> SchemaViolation {
        SchemaViolation(at: path, "expected \(expected), got \(value.typeName)")
    }

    private static func notOneOf(_ allowed: [String], at path: JSONPointer) -> SchemaViolation {
        SchemaViolation(at: path, "expected one of " + allowed.map { "\"\($0)\"" }.joined(separator: ", "))
    }
}

extension Schema {
    fileprivate var isNonNegativeInt: Bool {
        if case .nonNegativeInt = self { return true }
        return false
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}
