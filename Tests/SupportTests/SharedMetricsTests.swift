import CoreMetrics
import Foundation
import Testing

@testable import Support

/// Several stores in one folder stand for several processes (each holds the flock of its own
/// file); a copy of a file that no one holds stands for a dead process's.
@Suite struct SharedMetricsTests {
    func folder() throws -> String {
        let path = NSTemporaryDirectory() + "/metrics-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func processesMergeCountersAlwaysAndGaugesWhileAlive() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let a = try SharedMetrics(file: (dir, "worker")), b = try SharedMetrics(file: (dir, "jobs"))
        a.addCounter("t_total", 2)
        b.addCounter("t_total", 3)
        a.update("t_level", .gauge) { _ in 5 }
        b.observe("t_seconds", [("route", "/x")], 0.003, buckets: [0.001, 0.01])
        var merged = try SharedMetrics.merged(in: dir)
        #expect(merged["t_total"] == 5)
        #expect(merged["t_level"] == 5)
        #expect(merged[#"t_seconds_bucket{route="/x",le="0.001"}"#] == 0)
        #expect(merged[#"t_seconds_bucket{route="/x",le="0.01"}"#] == 1)
        #expect(merged[#"t_seconds_bucket{route="/x",le="+Inf"}"#] == 1)
        #expect(merged[#"t_seconds_sum{route="/x"}"#] == 0.003)
        #expect(merged[#"t_seconds_count{route="/x"}"#] == 1)

        // A dead process's file (no one holds its lock): its totals count, its levels do not.
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasPrefix("worker-") }
        try FileManager.default.copyItem(atPath: dir + "/" + files[0], toPath: dir + "/worker-999999-1.metrics")
        merged = try SharedMetrics.merged(in: dir)
        #expect(merged["t_total"] == 7)
        #expect(merged["t_level"] == 5)

        // Retiring it folds its totals into retired.metrics: the view does not move.
        try SharedMetrics.retireDead(in: dir)
        let after = try FileManager.default.contentsOfDirectory(atPath: dir)
        #expect(after.contains("retired.metrics") && !after.contains("worker-999999-1.metrics"))
        #expect(try SharedMetrics.merged(in: dir) == merged)
        // And again (a second restart): the retired totals are kept, not doubled.
        try FileManager.default.copyItem(atPath: dir + "/" + files[0], toPath: dir + "/worker-999998-1.metrics")
        try SharedMetrics.retireDead(in: dir)
        #expect(try SharedMetrics.merged(in: dir)["t_total"] == 9)
    }

    @Test func sumsAreExactWhateverTheOrder() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let stores = try (0..<3).map { _ in try SharedMetrics(file: (dir, "worker")) }
        for (n, store) in stores.enumerated() {
            for _ in 0..<(10 * (n + 1)) { store.addCounter("t_wait_seconds_total", 0.1) }
        }
        // 60 x 0.1 s: 6 exactly, not 5.999999999999999 (integer nanoseconds underneath).
        #expect(try SharedMetrics.merged(in: dir)["t_wait_seconds_total"] == 6)
    }

    @Test func timeIsCountedInNanosecondsAndEverythingElseInWholeUnits() {
        #expect(SharedMetrics.scale(of: "t_wait_seconds_total") == 1e9)
        #expect(SharedMetrics.scale(of: #"t_request_duration_seconds_sum{route="/x"}"#) == 1e9)
        #expect(SharedMetrics.scale(of: #"t_request_duration_seconds_bucket{route="/x",le="0.01"}"#) == 1)
        #expect(SharedMetrics.scale(of: "t_request_duration_seconds_count") == 1)
        #expect(SharedMetrics.scale(of: "t_blob_bytes_served_total") == 1)
        // Only the name decides, never a label's value.
        #expect(SharedMetrics.scale(of: #"t_requests_total{route="/seconds"}"#) == 1)
        #expect(SharedMetrics.scale(of: "seconds") == 1e9)
        #expect(SharedMetrics.scale(of: "second") == 1)
    }

    @Test func anObservationCostsLittle() throws {
        let store = try SharedMetrics(file: nil)
        let count = 100_000
        let started = DispatchTime.now()
        for n in 0..<count {
            store.observe("t_request_duration_seconds", [("method", "POST"), ("route", "/api/v1/sync/pull")],
                          Double(n % 100) / 1000, buckets: SharedMetrics.secondsBuckets)
        }
        let nanoseconds = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / Double(count)
        print("SharedMetrics.observe: \(Int(nanoseconds)) ns per observation (14 buckets, 2 labels)")
        #expect(SharedMetrics.Totals().values.isEmpty)
    }
}

/// swift-metrics' API through SharedMetricsFactory lands in this process's store as the
/// series /metrics serves: counters add, meters and gauges are levels, timers histograms.
@Suite struct SharedMetricsFactoryTests {
    @Test func swiftMetricsTypesRecordIntoTheSharedStore() {
        let factory = SharedMetricsFactory()
        let tag = String(UInt32.random(in: 0...UInt32.max))  // this test's own series in the process store
        Counter(label: "f\(tag)_total", dimensions: [("k", "v")], factory: factory).increment()
        Counter(label: "f\(tag)_total", dimensions: [("k", "v")], factory: factory).increment(by: 4)
        FloatingPointCounter(label: "f\(tag)_seconds_total", factory: factory).increment(by: 0.25)
        let meter = Meter(label: "f\(tag)_open", factory: factory)
        meter.increment(by: 3)
        meter.decrement(by: 1)
        Gauge(label: "f\(tag)_level", factory: factory).record(7)
        Timer(label: "f\(tag)_duration_seconds", factory: factory).recordMilliseconds(20)
        let merged = SharedMetrics.merged()
        #expect(merged["f\(tag)_total{k=\"v\"}"] == 5)
        #expect(merged["f\(tag)_seconds_total"] == 0.25)
        #expect(merged["f\(tag)_open"] == 2)
        #expect(merged["f\(tag)_level"] == 7)
        #expect(merged["f\(tag)_duration_seconds_count"] == 1)
        #expect(merged["f\(tag)_duration_seconds_bucket{le=\"0.025\"}"] == 1)
        #expect(merged["f\(tag)_duration_seconds_bucket{le=\"0.01\"}"] == 0)
        #expect(merged["f\(tag)_duration_seconds_sum"] == 0.02)
    }

    /// Handlers add to their slots without the store's lock: threads adding at once lose nothing.
    @Test func concurrentRecordingLosesNothing() {
        let factory = SharedMetricsFactory()
        let tag = String(UInt32.random(in: 0...UInt32.max))
        let counter = Counter(label: "f\(tag)_total", factory: factory)
        let timer = Timer(label: "f\(tag)_duration_seconds", factory: factory)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10_000 {
                counter.increment()
                timer.recordMilliseconds(2)
            }
        }
        let merged = SharedMetrics.merged()
        #expect(merged["f\(tag)_total"] == 80_000)
        #expect(merged["f\(tag)_duration_seconds_count"] == 80_000)
        #expect(merged["f\(tag)_duration_seconds_bucket{le=\"0.0025\"}"] == 80_000)
        #expect(merged["f\(tag)_duration_seconds_bucket{le=\"0.001\"}"] == 0)
        #expect(merged["f\(tag)_duration_seconds_sum"] == 160)
    }
}
