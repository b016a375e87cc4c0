/// An RFC 6901 JSON Pointer such as `/vessel/name` or `/crew/2/license`: how a schema violation
/// tells the client which value is wrong. The empty pointer `""` is the whole document.
public struct JSONPointer: Sendable, Hashable, CustomStringConvertible {
    public private(set) var segments: [String]

    public init(_ segments: [String] = []) {
        self.segments = segments
    }

    /// Parses pointer text; nil when it is neither empty nor starts with `/`, or has a bad `~` escape.
    public init?(parsing text: String) {
        if text.isEmpty {
            self.init()
            return
        }
        guard text.hasPrefix("/") else { return nil }
        var segments: [String] = []
        for raw in text.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            guard let segment = Self.unescape(raw) else { return nil }
            segments.append(segment)
        }
        self.init(segments)
    }

    public func appending(_ key: String) -> JSONPointer {
        JSONPointer(segments + [key])
    }

    public func appending(index: Int) -> JSONPointer {
        appending(String(index))
    }

    /// In place, for a walk that goes down and back up a document (schema validation).
    public mutating func append(_ key: String) { segments.append(key) }
    public mutating func append(index: Int) { segments.append(String(index)) }
    public mutating func removeLast() { segments.removeLast() }

    public var description: String {
        segments.map { "/" + Self.escape($0) }.joined()
    }

    /// `~` becomes `~0` and `/` becomes `~1`, so that a key holding `/` stays one segment.
    public static func escape(_ segment: String) -> String {
        guard segment.contains(where: { $0 == "~" || $0 == "/" }) else { return segment }
        var result = ""
        for character in segment {
            switch character {
            case "~": result += "~0"
            case "/": result += "~1"
            default: result.append(character)
            }
        }
        return result
    }

    /// The inverse of `escape`; nil for a `~` not followed by `0` or `1`.
    public static func unescape(_ segment: Substring) -> String? {
        var result = ""
        var iterator = segment.makeIterator()
        while let character = iterator.next() {
            guard character == "~" else {
                result.append(character)
                continue
            }
            switch iterator.next() {
            case "0": result.append("~")
            case "1": result.append("/")
            default: return nil
            }
        }
        return result
    }
}

extension JSON {
    /// The value a pointer designates, or nil when there is none (array segments must be indexes).
    public subscript(pointer: JSONPointer) -> JSON? {
        var current = self
        for segment in pointer.segments {
            switch current {
            case .object(let fields):
                guard let next = fields[segment] else { return nil }
                current = next
            case .array(let elements):
                guard let index = Int(segment), elements.indices.contains(index), String(index) == segment else { return nil }
                current = elements[index]
            default:
                return nil
            }
        }
        return current
    }
}
