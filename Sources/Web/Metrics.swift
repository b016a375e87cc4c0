import CoreMetrics
import Database
import Foundation
import Support

/// What `/metrics` shows (Prometheus text format 0.0.4): the series every process of the
/// host recorded in SharedMetrics, merged, plus levels read from the database at scrape
/// time. Every family is named in `families` (its type and help); docs/operations.md lists
/// them, Deploy/grafana and Deploy/prometheus use them.
public enum Metrics {
    public enum Kind: String, Sendable { case counter, gauge, histogram }

    /// name → (type, help). A series whose family is not here is not shown.
    public static let families: [String: (Kind, String)] = [
        "tideway_requests_total": (.counter, "Requests answered, by method, route pattern and status (all worker processes)."),
        "tideway_request_duration_seconds": (.histogram, "Time to answer a request in the worker, by method and route pattern."),
        "tideway_pulls_total": (.counter, "POST /api/v1/sync/pull answers by status."),
        "tideway_pushes_total": (.counter, "POST /api/v1/sync/push answers by status."),
        "tideway_idle_polls_total": (.counter, "Pulls that found nothing new (not in the request log unless TIDEWAY_LOG_IDLE_POLLS=on), by where they were answered (memory, database)."),
        "tideway_push_changes_total": (.counter, "Changes in pushes by outcome (applied, duplicate, rejected) and rejection code."),
        "tideway_events_published_total": (.counter, "Events the publisher handed to nginx, by kind (change, revoke)."),
        "tideway_event_publish_errors_total": (.counter, "Events the publisher could not hand to nginx."),
        "tideway_event_publish_lag_seconds": (.histogram, "From the publisher's receipt of a change notification to nginx accepting its event."),
        "tideway_events_caught_up_total": (.counter, "Partitions announced at publisher start because they changed while no publisher listened."),
        "tideway_event_reads_total": (.counter, "The publisher's reads of what a change event carries, by what they read (collection: the one collection notified; partition: all; widened: a collection's read again whole)."),
        "tideway_jobs_run_total": (.counter, "Jobs the job runner finished, by outcome (done, retry, failed)."),
        "tideway_jobs_queued": (.gauge, "Pending jobs in the queue (from the database at scrape time)."),
        "tideway_jobs_oldest_age_seconds": (.gauge, "Age of the oldest pending job, 0 when none (from the database at scrape time)."),
        "tideway_jobs_failed": (.gauge, "Jobs that gave up (from the database at scrape time)."),
        "tideway_db_pool_waits_total": (.counter, "Borrows of a database connection that had to wait for one to come back."),
        "tideway_db_pool_wait_seconds_total": (.counter, "Time spent waiting for a database connection."),
        "tideway_db_connection_errors_total": (.counter, "Database connections that could not be opened."),
        "tideway_db_connections_open": (.gauge, "Database connections the workers' pools hold open."),
        "tideway_db_connections_closed_idle_total": (.counter, "Database connections the pools closed after they lay idle for TIDEWAY_POOL_IDLE_SECONDS."),
        "tideway_database_up": (.gauge, "1 when the scrape could read the database's levels, else 0."),
        "tideway_blob_bytes_stored_total": (.counter, "Photo bytes accepted into the blob store (uploads and offloads)."),
        "tideway_blob_bytes_served_total": (.counter, "Photo bytes handed to nginx to send."),
        "tideway_blob_store_bytes": (.gauge, "Bytes of distinct photo contents the blob store holds (from the database at scrape time)."),
        "tideway_sessions_active": (.gauge, "Logins (API and web) not revoked with an unexpired token (from the database at scrape time)."),
        "tideway_event_streams_open": (.gauge, "Open event streams as nginx reported them (from the database at scrape time)."),
        "tideway_process_up": (.gauge, "Live Tideway processes by role (worker, jobs, events)."),
        "tideway_replica_reads_total": (.counter, "Pulls by where they were answered."),
        "tideway_replica_behind_bytes": (.gauge, "How far the replica's replay was behind the primary's position at the last pull that asked it (sum over workers)."),
    ]

    static let histogramBuckets = SharedMetrics.secondsBuckets

    /// One answered request.
    static func record(method: String, route: String?, status: Int, seconds elapsed: Double) {
        let series = RequestSeries.of(method: method, route: route ?? "unmatched", status: status)
        series.requests.increment()
        series.duration.recordSeconds(elapsed)
        series.byRoute?.increment()
    }

    /// The series one kind of request records into, made once per (method, route, status)
    /// and kept: making them per request (swift-metrics' handlers, their keys with escaped
    /// labels) cost a tenth of the worker's CPU per idle poll (docs/performance/round-02.md).
    struct RequestSeries: Sendable {
        let requests: CoreMetrics.Counter
        let duration: CoreMetrics.Timer
        /// tideway_pulls_total or tideway_pushes_total for those two routes.
        let byRoute: CoreMetrics.Counter?

        struct Kind: Hashable {
            let method: String
            let route: String
            let status: Int
        }

        /// At most this many kinds are kept (the method is the client's: any token nginx
        /// accepts); beyond it, each request makes its series anew, as before.
        static let keptLimit = 1024
        /// Read by every request of every thread, written once per kind: shared reads.
        private static let kept = ReadWriteLock<[Kind: RequestSeries]>([:])

        static func of(method: String, route: String, status: Int) -> RequestSeries {
            let kind = Kind(method: method, route: route, status: status)
            if let known = kept.read({ $0[kind] }) { return known }
            let made = RequestSeries(kind)
            kept.write { if $0.count < keptLimit { $0[kind] = made } }
            return made
        }

        private init(_ kind: Kind) {
            let status = String(kind.status)
            requests = Counter(label: "tideway_requests_total",
                               dimensions: [("method", kind.method), ("route", kind.route), ("status", status)])
            duration = CoreMetrics.Timer(label: "tideway_request_duration_seconds", dimensions: [("method", kind.method), ("route", kind.route)])
            byRoute = switch kind.route {
            case "/api/v1/sync/pull": Counter(label: "tideway_pulls_total", dimensions: [("status", status)])
            case "/api/v1/sync/push": Counter(label: "tideway_pushes_total", dimensions: [("status", status)])
            default: nil
            }
        }
    }

    /// The text of one scrape: every process's series, then the database's levels.
    public static func prometheusText(levels: [String: Double]) -> String {
        var series = SharedMetrics.merged()
        for (key, value) in levels { series[key] = value }
        var byFamily: [String: [(key: String, value: Double)]] = [:]
        for (key, value) in series {
            guard let family = family(of: key) else { continue }
            byFamily[family, default: []].append((key, value))
        }
        var text = ""
        for name in byFamily.keys.sorted() {
            let (kind, help) = families[name]!
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(kind.rawValue)\n"
            for (key, value) in byFamily[name]!.sorted(by: { order($0.key) < order($1.key) }) {
                text += "\(key) \(SharedMetrics.format(value))\n"
            }
        }
        return text
    }

    static func family(of key: String) -> String? {
        let name = String(key.prefix { $0 != "{" })
        if families[name] != nil { return name }
        for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
            let base = String(name.dropLast(suffix.count))
            if families[base]?.0 == .histogram { return base }
        }
        return nil
    }

    /// Sorts a histogram's series as the text format wants: per label set, buckets by bound,
    /// then `_sum` and `_count`.
    static func order(_ key: String) -> String {
        guard let brace = key.firstIndex(of: "{") else { return key }
        var name = String(key[..<brace])
        var labels = String(key[brace...])
        var rank = "0"
        for (suffix, r) in [("_bucket", "1"), ("_sum", "2"), ("_count", "3")] where name.hasSuffix(suffix) {
            name = String(name.dropLast(suffix.count))
            rank = r
        }
        var bound = ""
        if let range = labels.range(of: ",le=\"") ?? labels.range(of: "{le=\"") {
            let value = labels[range.upperBound...].prefix { $0 != "\"" }
            let number = value == "+Inf" ? 1e300 : Double(value) ?? 0
            bound = String(format: "%040.12f", number)
            labels.removeSubrange(range.lowerBound..<labels.index(range.upperBound, offsetBy: value.count + 1))
        }
        return "\(name) \(labels) \(rank) \(bound)"
    }

    /// Levels read from the database at scrape time (migration repeatable/0095_metrics.sql).
    static func databaseLevels(_ database: ConnectionPool) -> [String: Double] {
        do {
            let rows = try database.withConnection { try $0.execute("select name, value from app.metrics_levels()").rows }
            var levels = ["tideway_database_up": 1.0]
            for row in rows {
                if let name = row["name"], let value = row["value"].flatMap(Double.init) { levels[name] = value }
            }
            return levels
        } catch {
            return ["tideway_database_up": 0]
        }
    }
}

extension Metrics {
    /// Opens this process's metrics file (when TIDEWAY_METRICS_DIR is set), says the process
    /// is up, and sends its database pools' events there. Call once at start, before threads.
    public static func startProcess(role: String, config: Config) {
        SharedMetricsFactory.bootstrap()
        if let directory = config.metricsDirectory {
            do {
                try SharedMetrics.start(role: role, directory: directory)
            } catch {
                Log.warning("metrics: \(error); this process's metrics are its own only")
            }
        }
        Gauge(label: "tideway_process_up", dimensions: [("role", role)]).record(1)
        // Series that count rare things are shown at 0 from the start (so that rates and
        // alerts have a series before the first one happens).
        for name in ["tideway_db_pool_waits_total", "tideway_db_pool_wait_seconds_total", "tideway_db_connection_errors_total",
                     "tideway_db_connections_closed_idle_total"] {
            Counter(label: name).increment(by: 0)
        }
        Meter(label: "tideway_db_connections_open").increment(by: 0)
        switch role {
        case "worker":
            Counter(label: "tideway_blob_bytes_stored_total").increment(by: 0)
            Counter(label: "tideway_blob_bytes_served_total").increment(by: 0)
            for place in ["memory", "database"] { Counter(label: "tideway_idle_polls_total", dimensions: [("answered_by", place)]).increment(by: 0) }
            Counter(label: "tideway_replica_reads_total", dimensions: [("served_by", "replica")]).increment(by: 0)
            Counter(label: "tideway_replica_reads_total", dimensions: [("served_by", "primary"), ("reason", "replica_lagging")]).increment(by: 0)
            Counter(label: "tideway_replica_reads_total", dimensions: [("served_by", "primary"), ("reason", "replica_unavailable")]).increment(by: 0)
            Gauge(label: "tideway_replica_behind_bytes").record(0)
        case "events":
            Counter(label: "tideway_events_published_total", dimensions: [("kind", "change")]).increment(by: 0)
            Counter(label: "tideway_events_published_total", dimensions: [("kind", "revoke")]).increment(by: 0)
            Counter(label: "tideway_event_publish_errors_total").increment(by: 0)
            Counter(label: "tideway_events_caught_up_total").increment(by: 0)
        case "jobs":
            for outcome in ["done", "retry", "failed"] { Counter(label: "tideway_jobs_run_total", dimensions: [("outcome", outcome)]).increment(by: 0) }
        default:
            break
        }
        ConnectionPool.observer = { event in
            switch event {
            case .waited(let seconds):
                Counter(label: "tideway_db_pool_waits_total").increment()
                FloatingPointCounter(label: "tideway_db_pool_wait_seconds_total").increment(by: seconds)
            case .connectFailed:
                Counter(label: "tideway_db_connection_errors_total").increment()
            case .openChanged(let delta):
                Meter(label: "tideway_db_connections_open").increment(by: Double(delta))
            case .closedIdle(let count):
                Counter(label: "tideway_db_connections_closed_idle_total").increment(by: count)
            }
        }
    }
}
