import Dispatch
import Synchronization

/// Counters for `/metrics` (Prometheus text format), per process.
public final class Metrics: Sendable {
    private struct Counts {
        var byStatus: [Int: Int] = [:]
        var seconds: Double = 0
    }
    private let counts = Mutex(Counts())

    func record(status: Int, since start: DispatchTime) {
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        counts.withLock {
            $0.byStatus[status, default: 0] += 1
            $0.seconds += elapsed
        }
    }

    public func prometheusText() -> String {
        let snapshot = counts.withLock { $0 }
        var text = "# HELP tideway_requests_total Requests answered by this worker process, by status.\n"
        text += "# TYPE tideway_requests_total counter\n"
        for (status, count) in snapshot.byStatus.sorted(by: { $0.key < $1.key }) {
            text += "tideway_requests_total{status=\"\(status)\"} \(count)\n"
        }
        text += "# HELP tideway_request_seconds_total Time spent answering requests.\n"
        text += "# TYPE tideway_request_seconds_total counter\n"
        text += "tideway_request_seconds_total \(snapshot.seconds)\n"
        return text
    }
}
