import CoreMetrics

/// swift-metrics' API, recorded into this process's shared metrics file. Tideway's code
/// counts and times with swift-metrics (`Counter`, `FloatingPointCounter`, `Meter`, `Gauge`,
/// `Recorder`, `Timer`), the API the Swift server ecosystem shares, so a library that
/// reports through it lands in the same view; `SharedMetrics` is the backend that makes
/// one view of every process (swift-prometheus keeps one process's metrics in memory, which
/// is what two scrapes through nginx disagreed about). `Metrics.startProcess` bootstraps it.
///
/// The mapping: a Counter or FloatingPointCounter is a counter series (summed over every
/// process that ever ran); a Meter and a Gauge (a Recorder without aggregation) are gauges
/// (summed over live processes); a Timer is a histogram in seconds (`SharedMetrics
/// .secondsBuckets`), an aggregating Recorder a histogram of sizes (`byteBuckets`).
public struct SharedMetricsFactory: MetricsFactory {
    public init() {}

    /// Installs this factory as swift-metrics' backend once per process (later calls, as
    /// from tests that start several processes' worth of code, do nothing).
    public static func bootstrap() {
        _ = installed
    }

    private static let installed: Void = MetricsSystem.bootstrap(SharedMetricsFactory())

    public func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        CounterSeries(SharedMetrics.key(label, dimensions))
    }

    public func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        CounterSeries(SharedMetrics.key(label, dimensions))
    }

    public func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        GaugeSeries(SharedMetrics.key(label, dimensions))
    }

    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        aggregate ? Histogram(label, dimensions, buckets: SharedMetrics.byteBuckets) : GaugeSeries(SharedMetrics.key(label, dimensions))
    }

    public func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        Histogram(label, dimensions, buckets: SharedMetrics.secondsBuckets)
    }

    public func destroyCounter(_ handler: any CounterHandler) {}
    public func destroyMeter(_ handler: any MeterHandler) {}
    public func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {}
    public func destroyRecorder(_ handler: any RecorderHandler) {}
    public func destroyTimer(_ handler: any TimerHandler) {}

    /// A counter series (`name{labels}`).
    final class CounterSeries: CounterHandler, FloatingPointCounterHandler {
        let key: String
        let scale: Double
        /// Its slot, made now: an increment is one atomic add (see `SharedMetrics.Place`).
        let place: SharedMetrics.Place?
        init(_ key: String) {
            self.key = key
            scale = SharedMetrics.scale(of: key)
            place = SharedMetrics.counterPlace(key: key)
        }

        func increment(by amount: Int64) { add(Double(amount)) }
        func increment(by amount: Double) { add(amount) }

        private func add(_ amount: Double) {
            if let place, place.isCurrent {
                SharedMetrics.add(at: place, units: SharedMetrics.units(amount, scale: scale))
            } else {
                SharedMetrics.add(key: key, scale: scale, amount)
            }
        }
        /// A counter's total is the sum of what every process ever counted: it is not reset.
        func reset() {}
    }

    /// A gauge series of this process: set, or moved up and down.
    final class GaugeSeries: MeterHandler, RecorderHandler {
        let key: String
        init(_ key: String) { self.key = key }

        func set(_ value: Int64) { SharedMetrics.set(key: key, Double(value)) }
        func set(_ value: Double) { SharedMetrics.set(key: key, value) }
        func increment(by amount: Double) { SharedMetrics.shift(key: key, amount) }
        func decrement(by amount: Double) { SharedMetrics.shift(key: key, -amount) }
        func record(_ value: Int64) { set(value) }
        func record(_ value: Double) { set(value) }
    }

    /// A histogram: `_bucket{le}`, `_sum`, `_count` series.
    final class Histogram: TimerHandler, RecorderHandler {
        let name: String
        let labels: [(String, String)]
        let buckets: [Double]
        /// Made once: the series key and its sum's scale (building them was most of a
        /// request's recording).
        let series: String
        let sumScale: Double
        /// Its slots, made now: an observation is a few atomic adds (see `SharedMetrics.Place`).
        let place: SharedMetrics.Place?
        init(_ name: String, _ labels: [(String, String)], buckets: [Double]) {
            self.name = name
            self.labels = labels
            self.buckets = buckets
            series = SharedMetrics.key(name, labels)
            sumScale = SharedMetrics.scale(of: name + "_sum")
            place = SharedMetrics.histogramPlace(series: series, name, labels, buckets: buckets)
        }

        func recordNanoseconds(_ duration: Int64) { record(Double(duration) / 1e9) }
        func record(_ value: Int64) { record(Double(value)) }
        func record(_ value: Double) {
            if let place, place.isCurrent {
                SharedMetrics.observe(at: place, sumUnits: SharedMetrics.units(value, scale: sumScale), value, buckets: buckets)
            } else {
                SharedMetrics.observe(series: series, sumScale: sumScale, name, labels, value, buckets: buckets)
            }
        }
    }
}
