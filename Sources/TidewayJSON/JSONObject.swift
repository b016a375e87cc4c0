/// A JSON object: its fields kept sorted by their keys' UTF-8 bytes, the canonical text's order
/// (JSON+Serialization.swift), so that the writer walks them without sorting and a lookup is a
/// binary search instead of a hash (docs/performance/round-20.md, "The tree's shape
/// changed").
///
/// Keys mean what `[String: JSON]`'s keys meant: two keys are the same key when Swift's `==`
/// says so (canonical equivalence: `"é"` and `"e\u{301}"`, `"K"` and the Kelvin sign), though
/// their bytes differ. Such keys are not adjacent in byte order, so an object with a non-ASCII
/// key (`hasNonASCIIKey`), or a non-ASCII key looked up, falls back to comparing with `==` when
/// the bytes find nothing. ASCII keys are equal exactly when their bytes are.
public struct JSONObject: Sendable, RandomAccessCollection, ExpressibleByDictionaryLiteral {
    public typealias Element = (key: String, value: JSON)

    /// One field as an object stores it: a struct rather than the `Element` tuple, since an
    /// array of tuples is destroyed by the runtime's generic walk of each tuple's elements
    /// (`tuple_destroy`), an array of structs by the struct's own code
    /// (docs/performance/round-21.md, "The tree's release").
    struct Field: Sendable {
        var key: String
        var value: JSON
    }

    /// Sorted by `JSONObject.compare`, no two keys `==`.
    private(set) var fields: [Field]
    /// Whether some key was ever non-ASCII (never cleared: it only costs the fallback).
    private var hasNonASCIIKey: Bool

    public init() {
        fields = []
        hasNonASCIIKey = false
    }

    /// Fields sorted and unique already (the parser's, after its duplicate check).
    init(sortedFields: [Field], hasNonASCIIKey: Bool) {
        fields = sortedFields
        self.hasNonASCIIKey = hasNonASCIIKey
    }

    /// As `Dictionary(_:uniquingKeysWith:)` with the last value kept (JSON's dictionary literal).
    public init(_ elements: some Sequence<(String, JSON)>) {
        self.init(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }

    public init(dictionaryLiteral elements: (String, JSON)...) {
        self.init(elements)
    }

    public init(_ dictionary: [String: JSON]) {
        fields = dictionary.map { Field(key: $0.key, value: $0.value) }
        fields.sort { JSONObject.compare($0.key, $1.key) < 0 }
        hasNonASCIIKey = fields.contains { !JSONObject.isASCII($0.key) }
    }

    // MARK: Collection (the fields in canonical order)

    public var startIndex: Int { 0 }
    public var endIndex: Int { fields.count }
    public subscript(position: Int) -> Element {
        let field = fields[position]
        return (field.key, field.value)
    }

    public var keys: [String] { fields.map(\.key) }
    public var values: [JSON] { fields.map(\.value) }

    /// The fields as a dictionary, for code that needs one.
    public var dictionary: [String: JSON] {
        Dictionary(fields.lazy.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    // MARK: Lookup

    public subscript(key: String) -> JSON? {
        get {
            guard let index = index(forKey: key) else { return nil }
            return fields[index].value
        }
        set {
            switch find(key) {
            case .found(let index):
                if let newValue { fields[index].value = newValue } else { fields.remove(at: index) }
            case .missing(let insertion):
                guard let newValue else { return }
                fields.insert(Field(key: key, value: newValue), at: insertion)
                if !hasNonASCIIKey && !JSONObject.isASCII(key) { hasNonASCIIKey = true }
            }
        }
    }

    public func index(forKey key: String) -> Int? {
        if case .found(let index) = find(key) { return index }
        return nil
    }

    @discardableResult
    public mutating func updateValue(_ value: JSON, forKey key: String) -> JSON? {
        let old = self[key]
        self[key] = value
        return old
    }

    @discardableResult
    public mutating func removeValue(forKey key: String) -> JSON? {
        let old = self[key]
        self[key] = nil
        return old
    }

    public func mapValues(_ transform: (JSON) throws -> JSON) rethrows -> JSONObject {
        JSONObject(sortedFields: try fields.map { Field(key: $0.key, value: try transform($0.value)) }, hasNonASCIIKey: hasNonASCIIKey)
    }

    public func filter(_ isIncluded: (Element) throws -> Bool) rethrows -> JSONObject {
        JSONObject(sortedFields: try fields.filter { try isIncluded(($0.key, $0.value)) }, hasNonASCIIKey: hasNonASCIIKey)
    }

    private enum Position { case found(Int), missing(insertion: Int) }

    /// Binary search by bytes; on a miss, `==` where bytes are not the whole answer (the type's comment).
    private func find(_ key: String) -> Position {
        var low = 0, high = fields.count
        while low < high {
            let middle = (low + high) / 2
            let order = JSONObject.compare(fields[middle].key, key)
            if order == 0 { return .found(middle) }
            if order < 0 { low = middle + 1 } else { high = middle }
        }
        if hasNonASCIIKey || !JSONObject.isASCII(key), let index = fields.firstIndex(where: { $0.key == key }) {
            return .found(index)
        }
        return .missing(insertion: low)
    }

    // MARK: Key order

    /// Whether `left` comes before `right` in the canonical order of keys, their fields' order
    /// here and in the text: for keys sorted outside an object (`Schema.Fields`).
    package static func precedes(_ left: String, _ right: String) -> Bool {
        compare(left, right) < 0
    }

    /// The order of two keys' UTF-8 bytes (= Unicode code point order): negative, 0 or positive.
    static func compare(_ left: String, _ right: String) -> Int {
        // Native strings are contiguous UTF-8 already: read in place, neither copied into a `var`
        // for `withUTF8` (a retain, release and uniqueness check each) nor made contiguous.
        if let order = left.utf8.withContiguousStorageIfAvailable({ l in
            right.utf8.withContiguousStorageIfAvailable { r in compare(l, r) }
        }), let order { return order }
        var left = left, right = right
        return left.withUTF8 { l in right.withUTF8 { r in compare(l, r) } }
    }

    private static func compare(_ l: UnsafeBufferPointer<UInt8>, _ r: UnsafeBufferPointer<UInt8>) -> Int {
        let common = Swift.min(l.count, r.count)
        var index = 0
        while index < common {
            if l[index] != r[index] { return Int(l[index]) - Int(r[index]) }
            index += 1
        }
        return l.count - r.count
    }

    static func isASCII(_ key: String) -> Bool {
        key.utf8.allSatisfy { $0 < 0x80 }
    }
}

/// The same set of fields, each key as `==` finds it (what `[String: JSON]`'s `==` meant).
extension JSONObject: Equatable {
    public static func == (left: JSONObject, right: JSONObject) -> Bool {
        guard left.count == right.count else { return false }
        if !left.hasNonASCIIKey && !right.hasNonASCIIKey {
            return left.fields.elementsEqual(right.fields) { $0.key == $1.key && $0.value == $1.value }
        }
        // A dictionary, not `right[key]`: a lookup that misses scans these objects' fields.
        let rightFields = right.dictionary
        return left.fields.allSatisfy { rightFields[$0.key] == $0.value }
    }
}

/// Order-independent, as `Dictionary`'s: equal objects whose equivalent keys differ in bytes may
/// hold their fields in different orders.
extension JSONObject: Hashable {
    public func hash(into hasher: inout Hasher) {
        var sum = 0
        for field in fields {
            var fieldHasher = Hasher()
            fieldHasher.combine(field.key)
            fieldHasher.combine(field.value)
            sum = sum &+ fieldHasher.finalize()
        }
        hasher.combine(count)
        hasher.combine(sum)
    }
}

extension JSONObject: CustomStringConvertible {
    public var description: String { JSON.object(self).serialized() }
}
