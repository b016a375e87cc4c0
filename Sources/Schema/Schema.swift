import TidewayJSON

/// The shape a JSON value must have, written declaratively so that a collection's schema reads
/// like its description in domain.md. `SchemaValidator` gives these cases their meaning.
public indirect enum Schema: Sendable {
    /// Any string, empty included (the original apps write "" for fields left blank).
    case string
    /// A non-empty string of at most 128 characters: `_id` and other references.
    case identifier
    /// A whole number. An integral double (`3.0`) is accepted and stored as an integer.
    case int
    /// A whole number ≥ 0 (counts).
    case nonNegativeInt
    /// Any finite number.
    case number
    case bool
    /// An ISO 8601 / RFC 3339 date-time string with a zone: `2024-03-01T10:00:00Z`,
    /// `2024-03-01T10:00:00.123+02:00`. Without a zone the instant is unknown, so it is refused.
    case date
    /// One of these exact strings.
    case oneOf([String])
    /// One of the keys; the stored value is the key's value (accepted spelling → canonical one).
    case normalizedOneOf([String: String])
    /// Standard padded base64 (RFC 4648 §4, no line breaks), at most `maxBytes` once decoded.
    case base64(maxBytes: Int?)
    /// `#RRGGBB`; the O-FISH data's bare `RRGGBB` is accepted and stored with the `#`.
    case hexColor
    case array(Schema)
    /// Listed fields only: any other key is refused as "unknown field", so that typos surface.
    case object(Fields)
    /// `[lon, lat]`, lon in [-180, 180], lat in [-90, 90].
    case lonLat
    /// A closed polygon ring: at least 4 `[lon, lat]` points, the last equal to the first.
    case ring

    /// A field of an object: its schema and whether it must be present when the object is.
    public struct Field: Sendable {
        public let schema: Schema
        public let isRequired: Bool

        public static func required(_ schema: Schema) -> Field { Field(schema: schema, isRequired: true) }
        public static func optional(_ schema: Schema) -> Field { Field(schema: schema, isRequired: false) }
    }

    /// An object's fields in the order of `JSONObject`'s fields (their keys' UTF-8 bytes), so that
    /// `SchemaValidator` walks both in one merge instead of hashing each key
    /// (docs/performance/round-20.md, "The tree's shape changed").
    public struct Fields: Sendable, ExpressibleByDictionaryLiteral {
        /// Sorted as `JSONObject`'s fields are, as an object of these keys holds them.
        let sorted: [(key: String, field: Field)]
        let requiredCount: Int
        /// For lookups by key, as the validator's slower paths make them.
        private let byKey: [String: Field]

        public init(_ fields: [String: Field]) {
            sorted = fields.sorted { JSONObject.precedes($0.key, $1.key) }.map { ($0.key, $0.value) }
            requiredCount = fields.values.count(where: \.isRequired)
            byKey = fields
        }

        public init(dictionaryLiteral elements: (String, Field)...) {
            self.init(Dictionary(uniqueKeysWithValues: elements))
        }

        subscript(key: String) -> Field? { byKey[key] }
    }
}

/// Why a document was refused: `path` is a JSON Pointer to the offending value (`""` for the whole
/// document), `message` says what is wrong with it ("expected string, got number").
public struct SchemaViolation: Error, Sendable, Equatable, CustomStringConvertible {
    public let path: String
    public let message: String

    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    init(at pointer: JSONPointer, _ message: String) {
        self.init(path: pointer.description, message: message)
    }

    public var description: String { path.isEmpty ? message : "\(path): \(message)" }
}

/// One collection's rules: the document's fields (`_id` is added for every collection) and checks
/// that span several fields, run after the fields are valid.
public struct CollectionSchema: Sendable {
    public typealias Rule = @Sendable (_ document: JSONObject) -> SchemaViolation?

    public let name: String
    public let fields: [String: Schema.Field]
    public let rules: [Rule]
    /// `fields` as the object schema the validator walks, made once (an indirect case is a box).
    private let schema: Schema

    public init(name: String, fields: [String: Schema.Field], rules: [Rule] = []) {
        self.name = name
        var fields = fields
        fields["_id"] = .required(.identifier)
        self.fields = fields
        self.rules = rules
        self.schema = .object(Schema.Fields(fields))
    }

    /// The document as it should be stored (statuses and colours normalized), or the first violation.
    public func validate(_ document: JSON) throws(SchemaViolation) -> JSON {
        var path = JSONPointer()
        let validated = SchemaValidator.isValidAsIs(document, against: schema)
            ? document : try SchemaValidator.check(document, against: schema, at: &path) ?? document
        let object = validated.objectValue ?? [:]
        for rule in rules {
            if let violation = rule(object) { throw violation }
        }
        return validated
    }
}
