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
    /// concurrent pushes. Connections the pool opens later, under a burst, are warmed as it
    /// opens them (`connectionsOpenedLater`), so more here would only be opened to be warmed.
    package static let connections = 2

    /// Bounds one connection's statements (each takes ~20–40 ms of CPU on a busy 2-core host).
    static let statementTimeoutMilliseconds = 500
    /// Bounds the whole warm-up at start, every connection together, and one later
    /// connection's: a warm-up stuck behind a lock or a slow disk gives up rather than delay
    /// readiness (or hold a connection out of the pool) for longer. Each statement gets at
    /// most its share of what is left (`timeout`), so the bound holds even when every
    /// statement runs to its timeout.
    static let budgetSeconds = 1.0

    /// What one warm-up did, for the log line and tests.
    package struct Outcome: Sendable {
        package var warmed = 0
        package var seconds = 0.0
        package var failure: String?
    }

    /// Warms up to `connections` connections of `pool` (the write path, then the pull), one
    /// after the other, each in transactions rolled back, within `budget` seconds in all;
    /// never throws. Logs one line.
    @discardableResult
    package static func writePath(_ pool: ConnectionPool, connections: Int = connections,
                                  budget: Double = budgetSeconds) -> Outcome {
        let started = DispatchTime.now()
        let deadline = started + .nanoseconds(Int(budget * 1e9))
        var outcome = Outcome()
        do {
            try pool.withEach(connections) { connection in
                try warm(connection, until: deadline)
                outcome.warmed += 1
            }
        } catch {
            outcome.failure = "\(error)"
        }
        outcome.seconds = started.secondsElapsed
        let took = String(format: "%.1f ms", outcome.seconds * 1000)
        if let failure = outcome.failure {
            Log.warning("warm-up: \(outcome.warmed) connections warmed in \(took), then skipped: \(failure)")
        } else {
            Log.info("warm-up: the write path and pull of \(outcome.warmed) connections warmed in \(took)")
        }
        return outcome
    }

    /// The same warm-up for each connection `pool` opens from now on, off the requests'
    /// threads (`ConnectionPool.warmsConnectionsOpenedLater`); one log line per connection,
    /// at most one per pool thread in a worker's life (and again after PostgreSQL restarts).
    package static func connectionsOpenedLater(_ pool: ConnectionPool) {
        pool.warmsConnectionsOpenedLater { connection in
            let started = DispatchTime.now()
            do {
                try warm(connection, until: started + .nanoseconds(Int(budgetSeconds * 1e9)))
                Log.info("warm-up: a connection opened later warmed in \(String(format: "%.1f ms", started.secondsElapsed * 1000))")
            } catch {
                Log.warning("warm-up: a connection opened later not warmed: \(error)")
            }
        }
    }

    /// A partition no agency has: what the warm-ups read (nothing): the worker's pull here,
    /// the event publisher's reader at its start.
    package static let nowhere = Partition(Partition.agency("warm-up.nobody"))!

    struct OutOfTime: Error, CustomStringConvertible {
        var description: String { "its \(budgetSeconds) s were spent" }
    }

    /// The made-up push on one connection, then a pull of `nowhere`, each rolled back
    /// whatever happens (the function also undoes its own work: it ends by raising inside its
    /// block).
    static func warm(_ connection: Connection, until deadline: DispatchTime) throws {
        struct Undo: Error {}
        do {
            try connection.transaction { tx in
                _ = try tx.queries([try timeout(statements: 1, until: deadline), "select app.warm_up_write_path()"])
                throw Undo()
            }
        } catch is Undo {}
        // The pull's own statements as PullRoute sends them (prepared on this connection, their
        // generic plans made), in its kind of snapshot: a backend's first pull cost ~4 ms more
        // of its CPU than the next (docs/performance/round-11.md). The claims of a made-up officer of an
        // agency that does not exist, rather than app.authenticate's (no token): in a
        // read-only snapshot, rolled back, they read nothing.
        let pull = PullQuery.statements([PullAnswer.Entry(name: nowhere.description, partition: nowhere, cursor: .start)], limit: 1)
        do {
            try connection.transaction(snapshot: true) { tx in
                _ = try tx.queries([try timeout(statements: pull.count, until: deadline),
                                    "select app.claim_warm_up_officer(\(nowhere.value))"] + pull)
                throw Undo()
            }
        } catch is Undo {}
    }

    /// The transaction's statement timeout: at most `statementTimeoutMilliseconds`, and at
    /// most each statement's share of what is left before `deadline`.
    static func timeout(statements: Int, until deadline: DispatchTime) throws -> SQL {
        let left = Int(deadline.uptimeNanoseconds) - Int(DispatchTime.now().uptimeNanoseconds)
        let share = left / 1_000_000 / max(1, statements + 1)
        guard share > 0 else { throw OutOfTime() }
        return "select set_config('statement_timeout', \(String(min(statementTimeoutMilliseconds, share))), true)"
    }
}
