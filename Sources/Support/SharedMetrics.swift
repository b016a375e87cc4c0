import Foundation
import Synchronization

/// Metrics of every Tideway process on the host, in one view (docs/operations.md, Metrics).
///
/// Each process (every worker, `tideway jobs`, `tideway events`) keeps its series in a file
/// of its own under TIDEWAY_METRICS_DIR, mapped into memory: an increment is a store into
/// that mapping, so what a process counted is in the file even when it is killed a moment
/// later (`kill -9` loses nothing; the page cache keeps the mapping's pages). A process
/// holds an exclusive `flock` on its file for its whole life, which is how a reader tells a
/// live process from a dead one.
///
/// `/metrics` (any worker) merges every file: counters and histograms are summed over all
/// processes, live or dead, so they never go backwards when a worker restarts; gauges are
/// summed over live processes only. A process starting up folds the files of dead ones
/// into `retired.metrics` (their last totals) and removes them, under an exclusive lock on
/// the directory that readers hold shared while they read, so no scrape ever sees a dead
/// process's totals twice or not at all.
///
/// File layout: a 64-byte header (magic, used slot count), then `slotCount` slots of 128
/// bytes: kind (1 byte), key length (1 byte), the series key `name{labels}` (at most 118
/// bytes), and at offset 120 the value (8-byte aligned: one store, one load on the 64-bit
/// machines Tideway runs on): a gauge's Double, a counter's Int64 in units of `scale(of:)`
/// (1, or 1e-9 for seconds). Counters are integers so that sums over processes are exact
/// whatever their order: a float sum regrouped when a dead process is retired could come
/// out 1 ulp lower, and Prometheus would take that for a reset. Only the owning process writes a file:
/// its slots are made under its own mutex, a slot's key written before the used count that
/// publishes it; counters are added to atomically, gauges set under the mutex.
public final class SharedMetrics: @unchecked Sendable {
    public enum Kind: UInt8, Sendable {
        /// Summed over every process that ever ran (a total).
        case counter = 1
        /// Summed over live processes only (a level: open streams, connections in use).
        case gauge = 2
    }

    static let magic: UInt64 = 0x5444_574D_4554_5231  // "TDWMETR1"
    static let headerSize = 64
    static let slotSize = 128
    static let keyLimit = 118
    public static let slotCount = 8192
    static let fileSize = headerSize + slotCount * slotSize

    /// The process's store; recording before `start` (unit tests, one-shot commands) goes
    /// to a private in-memory one.
    nonisolated(unsafe) private(set) static var current = try! SharedMetrics(file: nil)

    /// Opens this process's file in `directory` (made if missing) and folds dead processes'
    /// files into the retired totals. Call once, before any thread records.
    public static func start(role: String, directory: String) throws {
        current = try SharedMetrics(file: (directory, role))
    }

    public static var directory: String? { current.directory }

    /// Adds to a counter series, e.g. `add("tideway_pushes_total")`.
    public static func add(_ name: String, _ labels: [(String, String)] = [], _ value: Double = 1) {
        current.addCounter(key(name, labels), value)
    }

    /// A counter's unit: nanoseconds for time (`…seconds…` totals and histogram sums), else
    /// whole units (counts, bytes, histogram buckets and counts).
    /// On bytes: Foundation's `contains` cost a request more than the rest of its recording.
    static func scale(of key: String) -> Double {
        let name = Array(key.utf8.prefix { $0 != UInt8(ascii: "{") })
        let endsWith = { (suffix: String) in name.suffix(suffix.utf8.count).elementsEqual(suffix.utf8) }
        if endsWith("_bucket") || endsWith("_count") { return 1 }
        return name.indices.contains { name[$0...].starts(with: "seconds".utf8) } ? 1e9 : 1
    }

    /// The same by series key (`key(name, labels)`), for swift-metrics' handlers, which keep it
    /// and its scale.
    static func add(key: String, scale: Double, _ value: Double) { current.addCounter(key, units: units(value, scale: scale)) }
    static func set(key: String, _ value: Double) { current.update(key, .gauge) { _ in value } }
    static func shift(key: String, _ value: Double) { current.update(key, .gauge) { $0 + value } }

    /// Sets a gauge series of this process.
    public static func set(_ name: String, _ labels: [(String, String)] = [], _ value: Double) {
        current.update(key(name, labels), .gauge) { _ in value }
    }

    /// Adds to a gauge series of this process (`-1` when a stream ends).
    public static func shift(_ name: String, _ labels: [(String, String)] = [], _ value: Double) {
        current.update(key(name, labels), .gauge) { $0 + value }
    }

    /// Seconds-long histogram buckets: 1 ms … 30 s.
    public static let secondsBuckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
    /// Byte-size buckets: 1 KiB … 16 MiB.
    public static let byteBuckets: [Double] = [1024, 16384, 131_072, 1_048_576, 4_194_304, 16_777_216]

    /// One observation of a histogram: `_bucket{le}` (cumulative), `_sum`, `_count`.
    public static func observe(_ name: String, _ labels: [(String, String)] = [], _ value: Double,
                               buckets: [Double] = secondsBuckets) {
        current.observe(name, labels, value, buckets: buckets)
    }

    /// The same for a histogram series whose key (`key(name, labels)`) and sum's scale the
    /// caller keeps (swift-metrics' handlers): no string work per observation.
    static func observe(series: String, sumScale: Double, _ name: String, _ labels: [(String, String)], _ value: Double,
                        buckets: [Double]) {
        current.observe(series: series, sumUnits: units(value, scale: sumScale), name, labels, value, buckets: buckets)
    }

    /// Where a counter series, or a histogram's series, live in one store: found once by the
    /// handler that keeps it (swift-metrics' handlers), so that recording is atomic adds into
    /// the mapping, without the store's lock or a lookup of the key (under 32 threads that
    /// lock, contended, and the keys' hashing were most of a request's recording).
    struct Place: @unchecked Sendable {
        let store: SharedMetrics
        /// A counter's slot; a histogram's bucket slots, then `+Inf`, `_sum`, `_count`.
        let indices: [Int]

        /// Still the process's store (`start` replaces the in-memory one the process began with).
        var isCurrent: Bool { store === SharedMetrics.current }
    }

    /// The place of a counter series in the process's store, made now; nil when it is full.
    static func counterPlace(key: String) -> Place? {
        let store = current
        return store.slots.withLock { store.slot(key, .counter, in: &$0) }.map { Place(store: store, indices: [$0]) }
    }

    /// The place of a histogram's series in the process's store, made now; nil when it is full.
    static func histogramPlace(series: String, _ name: String, _ labels: [(String, String)], buckets: [Double]) -> Place? {
        let store = current
        return store.slots.withLock { store.histogram(series, name, labels, buckets: buckets, in: &$0) }
            .map { Place(store: store, indices: $0) }
    }

    /// Adds to the counter at `place` (the process's store: see `Place.isCurrent`).
    static func add(at place: Place, units: Int64) {
        place.store.add(units: units, at: place.indices[0])
    }

    /// One observation of the histogram at `place` (the process's store: see `Place.isCurrent`).
    static func observe(at place: Place, sumUnits: Int64, _ value: Double, buckets: [Double]) {
        place.store.record(value, sumUnits: sumUnits, buckets: buckets, at: place.indices)
    }

    /// The series key: `name{a="x",b="y"}`, label values escaped as the text format says.
    public static func key(_ name: String, _ labels: [(String, String)]) -> String {
        guard !labels.isEmpty else { return name }
        let parts = labels.map { label, value in
            var escaped = ""
            for character in value {
                switch character {
                case "\\": escaped += "\\\\"
                case "\"": escaped += "\\\""
                case "\n": escaped += "\\n"
                default: escaped.append(character)
                }
            }
            return "\(label)=\"\(escaped)\""
        }
        return name + "{" + parts.joined(separator: ",") + "}"
    }

    // MARK: - One process's file

    private let base: UnsafeMutableRawPointer
    private let directory: String?
    private let slots = Mutex(Slots())

    /// One process's store (tests make several).
    init(file: (directory: String, role: String)?) throws {
        guard let file else {
            base = UnsafeMutableRawPointer.allocate(byteCount: Self.fileSize, alignment: 64)
            base.initializeMemory(as: UInt8.self, repeating: 0, count: Self.fileSize)
            base.storeBytes(of: Self.magic, as: UInt64.self)
            directory = nil
            return
        }
        try FileManager.default.createDirectory(atPath: file.directory, withIntermediateDirectories: true)
        directory = file.directory
        let role = file.role.filter { $0.isLetter || $0.isNumber || $0 == "-" }
        let path = "\(file.directory)/\(role)-\(getpid())-\(UInt64(Date().timeIntervalSince1970 * 1e6)).metrics"
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Failure("cannot create \(path): errno \(errno)") }
        // Held until the process ends (the descriptor is never closed): the sign of life.
        guard flock(fd, LOCK_EX | LOCK_NB) == 0, ftruncate(fd, off_t(Self.fileSize)) == 0,
              let mapped = mmap(nil, Self.fileSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0),
              mapped != MAP_FAILED
        else { throw Failure("cannot map \(path): errno \(errno)") }
        base = mapped
        base.storeBytes(of: Self.magic, as: UInt64.self)
        try Self.retireDead(in: file.directory)
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    private struct Slots {
        var index: [String: Int] = [:]
        /// A histogram's series (`name{labels}`) → its slots: one per bucket, `+Inf`, `_sum`, `_count`.
        var histograms: [String: [Int]] = [:]
        var full = false
    }

    /// The slot of `key`, made on first use; nil when the store is full. Under `slots`' lock.
    private func slot(_ key: String, _ kind: Kind, in slots: inout Slots) -> Int? {
        if let known = slots.index[key] { return known }
        let bytes = Array(key.utf8)
        guard bytes.count <= Self.keyLimit, slots.index.count < Self.slotCount else {
            if !slots.full {
                slots.full = true
                Log.warning("metrics: series \(key) not kept (key too long or store full)")
            }
            return nil
        }
        let index = slots.index.count
        let slot = base + Self.headerSize + index * Self.slotSize
        slot.storeBytes(of: kind.rawValue, as: UInt8.self)
        slot.storeBytes(of: UInt8(bytes.count), toByteOffset: 1, as: UInt8.self)
        bytes.withUnsafeBytes { (slot + 2).copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
        slot.storeBytes(of: UInt64(0), toByteOffset: 120, as: UInt64.self)
        atomicStore(base + 8, UInt64(index + 1))  // publishes the slot, key first
        slots.index[key] = index
        return index
    }

    private func value(at index: Int) -> UnsafeMutableRawPointer { base + Self.headerSize + index * Self.slotSize + 120 }

    func update(_ key: String, _ kind: Kind, _ change: (Double) -> Double) {
        slots.withLock { slots in
            guard let index = slot(key, kind, in: &slots) else { return }
            atomicStore(value(at: index), change(Double(bitPattern: atomicLoad(value(at: index)))).bitPattern)
        }
    }

    /// Adds `units` to a counter slot (an Int64): one atomic add, so no lock is needed (only
    /// this process writes its file; its threads add at once).
    private func add(units: Int64, at index: Int) {
        value(at: index).assumingMemoryBound(to: Atomic<UInt64>.self).pointee
            .wrappingAdd(UInt64(bitPattern: units), ordering: .relaxed)
    }

    static func units(_ amount: Double, scale: Double) -> Int64 {
        Int64(max(0, (amount * scale).rounded()))
    }

    func addCounter(_ key: String, _ amount: Double) {
        addCounter(key, units: Self.units(amount, scale: Self.scale(of: key)))
    }

    func addCounter(_ key: String, units: Int64) {
        guard let index = slots.withLock({ slot(key, .counter, in: &$0) }) else { return }
        add(units: units, at: index)
    }

    /// One lock and no string work per observation once the series' slots exist: a request
    /// records one of these.
    func observe(_ name: String, _ labels: [(String, String)], _ value: Double, buckets: [Double]) {
        observe(series: Self.key(name, labels), sumUnits: Self.units(value, scale: Self.scale(of: name + "_sum")),
                name, labels, value, buckets: buckets)
    }

    func observe(series: String, sumUnits: Int64, _ name: String, _ labels: [(String, String)], _ value: Double,
                 buckets: [Double]) {
        guard let indices = slots.withLock({ histogram(series, name, labels, buckets: buckets, in: &$0) }) else { return }
        record(value, sumUnits: sumUnits, buckets: buckets, at: indices)
    }

    /// A histogram's slots (each bucket, `+Inf`, `_sum`, `_count`), made on first use; nil
    /// when the store is full. Under `slots`' lock.
    private func histogram(_ series: String, _ name: String, _ labels: [(String, String)], buckets: [Double],
                           in slots: inout Slots) -> [Int]? {
        if let known = slots.histograms[series] { return known }
        let bounds = buckets.map(Self.format) + ["+Inf"]
        var keys = bounds.map { Self.key(name + "_bucket", labels + [("le", $0)]) }
        keys += [Self.key(name + "_sum", labels), Self.key(name + "_count", labels)]
        var indices: [Int] = []
        for key in keys {
            guard let index = slot(key, .counter, in: &slots) else { return nil }
            indices.append(index)
        }
        slots.histograms[series] = indices
        return indices
    }

    private func record(_ value: Double, sumUnits: Int64, buckets: [Double], at indices: [Int]) {
        for (n, bound) in buckets.enumerated() where value <= bound { add(units: 1, at: indices[n]) }
        add(units: 1, at: indices[buckets.count])
        add(units: sumUnits, at: indices[buckets.count + 1])
        add(units: 1, at: indices[buckets.count + 2])
    }

    // MARK: - Reading and merging

    /// Every series of every process in `directory` (or of this process alone without one),
    /// merged: counters summed over all, gauges over live processes.
    public static func merged() -> [String: Double] {
        guard let directory = current.directory else {
            var totals = Totals()
            read(current.base) { key, kind, raw in totals.add(key, kind, raw, live: true) }
            return totals.values
        }
        return (try? merged(in: directory)) ?? [:]
    }

    public static func merged(in directory: String) throws -> [String: Double] {
        try withDirectoryLock(directory, LOCK_SH) {
            var totals = Totals()
            for name in try FileManager.default.contentsOfDirectory(atPath: directory) where name.hasSuffix(".metrics") {
                let path = directory + "/" + name
                try withMapping(path) { fd, base in
                    let live = name != "retired.metrics" && flock(fd, LOCK_EX | LOCK_NB) != 0
                    // A dead process's gauges still name their series (at 0), so that a
                    // level never disappears from the view while its processes restart.
                    read(base) { key, kind, raw in totals.add(key, kind, raw, live: live) }
                }
            }
            return totals.values
        }
    }

    /// Counters summed as integers (exact in any order), gauges as Doubles.
    struct Totals {
        var counters: [String: Int64] = [:]
        var gauges: [String: Double] = [:]

        mutating func add(_ key: String, _ kind: Kind, _ raw: UInt64, live: Bool) {
            switch kind {
            case .counter: counters[key, default: 0] &+= Int64(bitPattern: raw)
            case .gauge:
                let value = Double(bitPattern: raw)
                gauges[key, default: 0] += live && value.isFinite ? value : 0
            }
        }

        var values: [String: Double] {
            var all = gauges
            for (key, units) in counters { all[key] = Double(units) / SharedMetrics.scale(of: key) }
            return all
        }
    }

    /// Folds the files of dead processes into `retired.metrics` and removes them.
    static func retireDead(in directory: String) throws {
        try withDirectoryLock(directory, LOCK_EX) {
            var retired: [String: Int64] = [:]
            var dead: [String] = []
            for name in try FileManager.default.contentsOfDirectory(atPath: directory) where name.hasSuffix(".metrics") {
                let path = directory + "/" + name
                try withMapping(path) { fd, base in
                    let isRetired = name == "retired.metrics"
                    guard isRetired || flock(fd, LOCK_EX | LOCK_NB) == 0 else { return }
                    if !isRetired { dead.append(path) }
                    read(base) { key, kind, raw in
                        if kind == .counter { retired[key, default: 0] &+= Int64(bitPattern: raw) }
                    }
                }
            }
            guard !dead.isEmpty else { return }
            guard retired.count <= slotCount else { throw Failure("retired metrics: more than \(slotCount) series") }
            // Written whole and renamed over the old one, then the dead files go: readers
            // wait on the lock we hold, so they see either all of this or none of it.
            let data = NSMutableData(length: fileSize)!
            let base = data.mutableBytes
            base.storeBytes(of: magic, as: UInt64.self)
            var index = 0
            for (key, value) in retired.sorted(by: { $0.key < $1.key }) {
                let bytes = Array(key.utf8)
                let slot = base + headerSize + index * slotSize
                slot.storeBytes(of: Kind.counter.rawValue, as: UInt8.self)
                slot.storeBytes(of: UInt8(bytes.count), toByteOffset: 1, as: UInt8.self)
                bytes.withUnsafeBytes { (slot + 2).copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
                slot.storeBytes(of: UInt64(bitPattern: value), toByteOffset: 120, as: UInt64.self)
                index += 1
            }
            base.storeBytes(of: UInt64(index), toByteOffset: 8, as: UInt64.self)
            let temporary = directory + "/retired.tmp"
            guard data.write(toFile: temporary, atomically: false) else { throw Failure("cannot write \(temporary)") }
            guard rename(temporary, directory + "/retired.metrics") == 0 else { throw Failure("cannot rename \(temporary): errno \(errno)") }
            for path in dead { unlink(path) }
        }
    }

    private static func read(_ base: UnsafeRawPointer, _ each: (String, Kind, UInt64) -> Void) {
        guard base.load(as: UInt64.self) == magic else { return }
        let used = min(Int(atomicLoad(UnsafeMutableRawPointer(mutating: base) + 8)), slotCount)
        for index in 0..<used {
            let slot = base + headerSize + index * slotSize
            guard let kind = Kind(rawValue: slot.load(as: UInt8.self)) else { continue }
            let length = Int(slot.load(fromByteOffset: 1, as: UInt8.self))
            let key = String(decoding: UnsafeRawBufferPointer(start: slot + 2, count: min(length, keyLimit)), as: UTF8.self)
            each(key, kind, atomicLoad(UnsafeMutableRawPointer(mutating: slot) + 120))
        }
    }

    private static func withMapping(_ path: String, _ body: (Int32, UnsafeRawPointer) throws -> Void) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }  // removed meanwhile by a process retiring it
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, Int(info.st_size) >= fileSize,
              let mapped = mmap(nil, fileSize, PROT_READ, MAP_SHARED, fd, 0), mapped != MAP_FAILED
        else { return }
        defer { munmap(mapped, fileSize) }
        try body(fd, mapped)
    }

    private static func withDirectoryLock<T>(_ directory: String, _ mode: Int32, _ body: () throws -> T) throws -> T {
        let fd = open(directory + "/.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Failure("cannot open \(directory)/.lock: errno \(errno)") }
        defer { close(fd) }
        while flock(fd, mode) != 0 {
            guard errno == EINTR else { throw Failure("cannot lock \(directory)/.lock: errno \(errno)") }
        }
        return try body()
    }

    /// A value printed the way Prometheus prints bucket bounds (`0.005`, `1`, `+Inf`).
    public static func format(_ value: Double) -> String {
        if value == value.rounded() && abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}

// One aligned 8-byte load or store (never torn on x86-64 or arm64); the release order of
// the used count after a slot's key is what a reader relies on.
@inline(__always) private func atomicStore(_ pointer: UnsafeMutableRawPointer, _ value: UInt64) {
    pointer.assumingMemoryBound(to: Atomic<UInt64>.self).pointee.store(value, ordering: .releasing)
}

@inline(__always) private func atomicLoad(_ pointer: UnsafeMutableRawPointer) -> UInt64 {
    pointer.assumingMemoryBound(to: Atomic<UInt64>.self).pointee.load(ordering: .acquiring)
}
