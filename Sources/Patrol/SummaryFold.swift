import Database
import Support

/// The dashboards' daily summaries folded from the reports' changes (Migrations/0087: taken
/// off the write path, folded in batches here), on a connection of its own: `tideway jobs`
/// runs one every `JobRunner.foldEvery` seconds, `tideway jobs --once` one at once.
///
/// Its own connection for two reasons (docs/performance.md, "The summary fold off the
/// event's tail"). Its backend may run at the lowest CPU priority (`Priority.idle`), while
/// the runner's jobs, which write through the write path and so hold partition clocks that
/// writers wait for, keep theirs. And the fold is one statement in its own implicit
/// transaction, with `synchronous_commit` off for the whole session: one round trip a turn
/// instead of BEGIN, SET LOCAL, the fold and COMMIT.
public final class SummaryFold {
    /// The CPU priority of the fold's backend: `idle` (Linux's SCHED_IDLE: it runs only on a
    /// core no other process wants, and any process that wakes takes its core at once) or
    /// `normal`.
    public enum Priority: String, CaseIterable, Sendable {
        case idle, normal
    }

    let connection: Connection

    /// Not waiting for the disk: a fold moves the summaries and their watermark in one
    /// transaction, so a crash that loses it loses both, and the next fold does the same work
    /// again. Its WAL goes to disk with the next durable commit (a write's), so a fold adds no
    /// flush of its own beside the writers' every turn.
    public init(conninfo: String, priority: Priority) throws {
        connection = try Connection(conninfo: conninfo)
        try connection.execute("set synchronous_commit = off")
        lower(to: priority)
    }

    /// Lowers the backend to `priority` (app.lower_fold_priority, Migrations/repeatable/0106).
    /// Writers never wait for a fold's locks, so a starved fold delays only the dashboards'
    /// counts. Where the database may not run the program that does it, the fold runs at
    /// normal priority and says so once.
    func lower(to priority: Priority) {
        guard priority != .normal else { return }
        do {
            try connection.execute("select app.lower_fold_priority(\(priority.rawValue))")
            Log.info("jobs: the summaries' fold runs at \(priority.rawValue) CPU priority")
        } catch {
            Log.warning("jobs: the summaries' fold stays at normal CPU priority: \(error)")
        }
    }

    /// Folds the report changes of every agency not yet in the summaries; answers how many
    /// reports changed what they count. A fold that loses a race (a deadlock cannot happen:
    /// partitions are folded in order) is simply tried again at the next turn.
    @discardableResult
    public func run() throws -> Int {
        do {
            return try connection.execute("select app.fold_boarding_summaries() as folded").rows.first?.int("folded") ?? 0
        } catch {
            // (`execute` throws only DatabaseError.) The runner exits on `unavailable`.
            guard error.kind != .unavailable else { throw error }
            Log.warning("jobs: folding the dashboard summaries failed: \(error)")
            return 0
        }
    }
}
