import CoreMetrics
import Database
import Foundation
import Support
import Synchronization

/// Reads that may be served by a streaming replica (issue 19): pulls and long polls. The
/// rule that keeps the sync invariant: a request first learns the primary's WAL position
/// (`pg_current_wal_lsn()`, in the statement it sends there anyway), and the replica answers
/// only once it has replayed that far, checked *before* its snapshot is taken. The snapshot
/// then holds every commit the primary had when the request began: the caller's own
/// accepted pushes, and every change of a partition up to the clock the primary showed (a
/// partition's writers commit in clock order: they queue on its clock row). A replica that
/// stays behind for `wait`, or fails, hands the read to the primary; one that cannot be
/// reached is left alone for a few seconds.
public final class ReplicaReads: Sendable {
    let pool: ConnectionPool
    let wait: Double
    private let state = Mutex(State())

    struct State {
        var servedByReplica = 0
        var lagging = 0
        var unavailable = 0
        var behindBytes: Double = 0
        var skipUntil = Date.distantPast
    }

    public init(conninfo: String, capacity: Int, wait: Double) {
        pool = ConnectionPool(conninfo: conninfo, capacity: capacity)
        self.wait = wait
    }

    /// `body` on a replica connection once it has replayed `lsn`; nil when the primary
    /// must answer instead (lagging past `wait`, unreachable, or `body` failed there: the
    /// primary then gives the real answer, errors included).
    func read<T>(after lsn: String, _ body: (Connection) throws -> T) -> T? {
        guard state.withLock({ Date() >= $0.skipUntil }) else { return nil }
        let deadline = Date().addingTimeInterval(wait)
        do {
            return try pool.withConnection { connection -> T? in
                while true {
                    // A promoted replica is a primary itself: it has everything, nothing to wait for.
                    let behind = try connection.execute("""
                        select case when pg_is_in_recovery()
                                    then greatest(pg_wal_lsn_diff(\(lsn)::pg_lsn, pg_last_wal_replay_lsn()), 0) else 0 end as behind
                        """).first?.decodeIfPresent("behind", as: Double.self)
                    state.withLock { $0.behindBytes = behind ?? 0 }
                    Gauge(label: "tideway_replica_behind_bytes").record(behind ?? 0)
                    if (behind ?? 0) <= 0 { break }
                    if Date() >= deadline {
                        state.withLock { $0.lagging += 1 }
                        Counter(label: "tideway_replica_reads_total", dimensions: [("served_by", "primary"), ("reason", "replica_lagging")]).increment()
                        return nil
                    }
                    usleep(2_000)
                }
                let answer = try body(connection)
                state.withLock { $0.servedByReplica += 1 }
                Counter(label: "tideway_replica_reads_total", dimensions: [("served_by", "replica")]).increment()
                return answer
            }
        } catch let error as DatabaseError where error.kind == .unavailable {
            state.withLock {
                $0.unavailable += 1
                Counter(label: "tideway_replica_reads_total", dimensions: [("served_by", "primary"), ("reason", "replica_unavailable")]).increment()
                $0.skipUntil = Date().addingTimeInterval(5)
            }
            return nil
        } catch {
            // A statement the replica refused (a recovery conflict, the caller's own 401):
            // the primary answers, and says the same if it was the caller's.
            state.withLock { $0.unavailable += 1 }
            Counter(label: "tideway_replica_reads_total", dimensions: [("served_by", "primary"), ("reason", "replica_unavailable")]).increment()
            return nil
        }
    }

    /// What the inspector and `/metrics` show, for this worker process.
    public struct Figures: Sendable {
        public let servedByReplica: Int
        public let lagging: Int
        public let unavailable: Int
        public let behindBytes: Double
    }

    public var figures: Figures {
        state.withLock { Figures(servedByReplica: $0.servedByReplica, lagging: $0.lagging, unavailable: $0.unavailable,
                                 behindBytes: $0.behindBytes) }
    }
}
