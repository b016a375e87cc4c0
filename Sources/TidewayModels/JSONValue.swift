import Foundation

/// A JSON value as the sync API carries it: documents, merge patches, answers.
/// Numbers keep integers apart from fractions so that a round trip does not turn `3` into `3.0`.
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    public subscript(key: String) -> JSONValue? {
        if case .object(let fields) = self { return fields[key] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var objectValue: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    public var intValue: Int? {
        switch self {
        case .int(let value): return Int(value)
        case .double(let value) where value == value.rounded(): return Int(value)
        default: return nil
        }
    }

    /// Compact JSON with sorted keys (stable bytes for storage and comparison).
    public func encoded() -> Data { JSONText.write(self) }

    public func text() -> String {
        var out = [UInt8]()
        JSONText.write(self, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode(_ data: Data) throws -> JSONValue { try JSONText.parse(data) }

    public static func decode(_ text: String) throws -> JSONValue { try decode(Data(text.utf8)) }

    /// Any Encodable (a model struct) as a JSON value.
    public static func from<T: Encodable>(_ value: T) throws -> JSONValue {
        try decode(encoder.encode(value))
    }

    /// The JSON value as a model struct.
    public func decoded<T: Decodable>(as type: T.Type) throws -> T {
        try JSONDecoder().decode(type, from: encoded())
    }

    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral, ExpressibleByFloatLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    public init(nilLiteral: ()) { self = .null }
}

/// JSON Merge Patch (RFC 7396): how an update travels, so that fields the device did not
/// touch keep the server's value.
public enum MergePatch {
    /// The patch that turns `old` into `new`: changed fields only; a removed field is `null`;
    /// arrays are replaced whole. nil when nothing changed.
    public static func diff(from old: JSONValue, to new: JSONValue) -> JSONValue? {
        guard case .object(let before) = old, case .object(let after) = new else {
            return old == new ? nil : new
        }
        var patch: [String: JSONValue] = [:]
        for (key, value) in after {
            guard let previous = before[key] else {
                if value != .null { patch[key] = value }
                continue
            }
            if previous == value { continue }
            if case .object = previous, case .object = value {
                if let inner = diff(from: previous, to: value) { patch[key] = inner }
            } else if value == .null {
                patch[key] = .null
            } else {
                patch[key] = value
            }
        }
        for key in before.keys where after[key] == nil && before[key] != .null {
            patch[key] = .null
        }
        return patch.isEmpty ? nil : .object(patch)
    }

    /// RFC 7396 section 2: the patch applied to a target.
    public static func apply(_ patch: JSONValue, to target: JSONValue) -> JSONValue {
        guard case .object(let changes) = patch else { return patch }
        var result: [String: JSONValue]
        if case .object(let fields) = target { result = fields } else { result = [:] }
        for (key, value) in changes {
            if value == .null {
                result.removeValue(forKey: key)
            } else {
                result[key] = apply(value, to: result[key] ?? .null)
            }
        }
        return .object(result)
    }
}
