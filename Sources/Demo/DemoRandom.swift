/// The demo data's random numbers: SplitMix64 (Steele, Lea & Flood, 2014).
///
/// Demo data must be byte-identical for the same seed on every machine and Swift
/// version. The system generator is not seedable, and the standard library's
/// `random(in:using:)` does not promise a fixed algorithm, so every draw here is
/// computed by our own code.
struct DemoRandom {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    /// A generator for one named sub-stream (a vessel fleet, one officer's shifts), so
    /// that adding draws to one stream never changes the others.
    init(seed: UInt64, stream: String) {
        self.init(seed: seed ^ DemoRandom.fnv1a(stream))
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in `0..<bound` by taking the high word of a 64×64 multiply; its bias is
    /// below bound/2^64, far below anything demo data could show.
    mutating func below(_ bound: Int) -> Int {
        precondition(bound > 0, "empty range")
        return Int(next().multipliedFullWidth(by: UInt64(bound)).high)
    }

    mutating func int(in range: ClosedRange<Int>) -> Int {
        range.lowerBound + below(range.count)
    }

    /// Uniform in [0, 1) with 53 bits of precision.
    mutating func unit() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    mutating func double(in range: ClosedRange<Double>) -> Double {
        range.lowerBound + unit() * (range.upperBound - range.lowerBound)
    }

    mutating func chance(_ probability: Double) -> Bool {
        unit() < probability
    }

    mutating func pick<Element>(_ items: [Element]) -> Element {
        items[below(items.count)]
    }

    /// `count` distinct elements in random order (a partial Fisher–Yates shuffle).
    mutating func sample<Element>(_ items: [Element], count: Int) -> [Element] {
        var pool = items
        let count = min(count, pool.count)
        for index in 0..<count {
            pool.swapAt(index, index + below(pool.count - index))
        }
        return Array(pool.prefix(count))
    }

    /// A Mongo-style ObjectId: 4 bytes of seconds since 1970, then 8 random bytes, as 24
    /// lower-case hex digits. The time prefix makes ids sort by creation, as the originals did.
    mutating func objectID(epochSeconds: Int64) -> String {
        let time = UInt32(truncatingIfNeeded: max(0, epochSeconds))
        return DemoRandom.hex(UInt64(time), digits: 8) + DemoRandom.hex(next(), digits: 16)
    }

    /// A non-negative number written with at least `width` digits (`00042`).
    static func digits(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }

    static func hex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }

    /// FNV-1a over UTF-8: a stable hash for deriving seeds from names (`Hasher` is
    /// randomly seeded per process, so it cannot be used for this).
    static func fnv1a(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in text.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        return hash
    }
}
