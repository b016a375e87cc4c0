import Dispatch

extension DispatchTime {
    /// Seconds from this moment to now, on the monotonic clock `DispatchTime` reads: what the
    /// log lines and latency metrics report for a piece of work (one home for the arithmetic
    /// each of them wrote out).
    public var secondsElapsed: Double {
        Double(DispatchTime.now().uptimeNanoseconds - uptimeNanoseconds) / 1e9
    }
}
