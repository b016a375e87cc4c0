import Database
import Foundation
import Support

/// The worker's warm-up at start: a PostgreSQL backend's first push costs ~11 ms more of its
/// CPU than the next (the write path's relations, policies, triggers and PL/pgSQL functions
/// loaded and planned in that backend), and after a restart the first field devices' pushes
/// paid it. Before the worker accepts, each of a few pooled connections runs a made-up push
/// that is rolled back (`app.warm_up_write_path`, Migrations/repeatable/0105_warm_up.sql,
/// which says why nothing of it stays). Best effort: a database that is not there, or a
/// schema without the function (a rolling upgrade's new worker on the old schema), is a
/// warning, and the worker serves cold as it did before.
package enum WarmUp {
    /// Connections warmed at start. The pool opens connections on demand and lends the one
    /// given back last first, so a worker serving pushes one at a time uses one; two cover two
    /// concurrent pushes. More would be opened only to be warmed: a connection opened later,
    /// under a burst, warms on its first push as before.
    package static let connections = 2

    /// Bounds each connection's warm-up (it takes ~20–40 ms of CPU on a busy 2-core host):
    /// a warm-up stuck behind a lock or a slow disk gives up rather than delay readiness.
    static let statementTimeoutMilliseconds = 500

    /// What one warm-up did, for the log line and tests.
    package struct Outcome: Sendable {
        package var warmed = 0
        package var seconds = 0.0
        package var failure: String?
    }

    /// Warms up to `connections` connections of `pool` (the write path, then the pull), one
    /// after the other, each in transactions rolled back; never throws. Logs one line.
    @discardableResult
    package static func writePath(_ pool: ConnectionPool, connections: Int = connections) -> Outcome {
        let started = DispatchTime.now()
        var outcome = Outcome()
        do {
            try pool.withEach(connections) { connection in
                try warm(connection)
                outcome.warmed += 1
            }
        } catch {
            outcome.failure = "\(error)"
        }
        outcome.seconds = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        let took = String(format: "%.1f ms", outcome.seconds * 1000)
        if let failure = outcome.failure {
            Log.warning("warm-up: \(outcome.warmed) connections warmed in \(took), then skipped: \(failure)")
        } else {
            Log.info("warm-up: the write path and pull of \(outcome.warmed) connections warmed in \(took)")
        }
        return outcome
    }

    /// A partition no agency has: what the warm-ups read (nothing): the worker's pull here,
    /// the event publisher's reader at its start.
    package static let nowhere = Partition(Partition.agency("warm-up.nobody"))!

    /// The made-up push on one connection, then a pull of `nowhere`, each rolled back
    /// whatever happens (the function also undoes its own work: it ends by raising inside its
    /// block).
    static func warm(_ connection: Connection) throws {
        struct Undo: Error {}
        let timeout: SQL = "select set_config('statement_timeout', \(String(statementTimeoutMilliseconds)), true)"
        do {
            try connection.transaction { tx in
                _ = try tx.queries([timeout, "select app.warm_up_write_path()"])
                throw Undo()
            }
        } catch is Undo {}
        // The pull's own statements as PullRoute sends them (prepared on this connection, their
        // generic plans made), in its kind of snapshot: a backend's first pull cost ~4 ms more
        // of its CPU than the next (docs/performance.md). The claims of a made-up officer of an
        // agency that does not exist, set here rather than by app.authenticate (no token): in a
        // read-only snapshot, rolled back, they read nothing.
        do {
            try connection.transaction(snapshot: true) { tx in
                _ = try tx.queries([
                    timeout,
                    """
                    select set_config('tideway.user_id', gen_random_uuid()::text, true), set_config('tideway.role', 'officer', true),
                           set_config('tideway.agency', \(nowhere.value), true)
                    """,
                    PullQuery.genericPlans, PullQuery.statuses([nowhere.description]),
                    PullQuery.changes(of: nowhere, after: .start, limit: 2),
                ])
                throw Undo()
            }
        } catch is Undo {}
    }
}
