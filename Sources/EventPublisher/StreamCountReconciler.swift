import Database
import Events
import Foundation
import Support

/// Keeps the stream counts behind presence true to what nginx holds. nchan reports each
/// stream's start and end to a worker (EventRoutes), and nginx drops such a report without a
/// word when no worker accepts it: 10,000 streams closing at once overflow the accept queues.
/// Every `interval` seconds, and at once on `NOTIFY tideway_streams_check`, this asks nginx
/// how many streams each login counted as streaming (or counted lately) really holds, and
/// sets the counts (migration 0052). Runs in `tideway events`, beside the publisher.
///
/// Its connection does not LISTEN: the publisher's listening connection hears
/// `tideway_streams_check` and calls `checkNow()`. PostgreSQL 15 signals every listening
/// backend of the database at every commit that notifies, whatever the channel, so a
/// listener of its own was one more backend woken by every write (docs/performance/round-07.md,
/// "Listeners woken per commit"). While the publisher's listener reconnects, a request is
/// missed and waits for the next round, as it did when this connection was down.
/// Unchecked Sendable: after `start()` only its own thread touches it, but for `wake`.
final class StreamCountReconciler: @unchecked Sendable {
    let conninfo: String
    /// Every nginx instance's publisher: a login's streams are the sum of theirs.
    let nchan: NchanInstances
    let interval: Double
    /// Signalled by `checkNow()`; the round waits on it.
    private let wake = DispatchSemaphore(value: 0)
    /// New connections per disagreeing login: with half of the workers' answers wrong, 16
    /// all wrong happens about once in 65,000 (measured rates 40-60% wrong).
    static let tries = 16

    init(conninfo: String, publishSockets: [String], interval: Double) {
        self.conninfo = conninfo
        self.nchan = NchanInstances(socketPaths: publishSockets)
        self.interval = interval
    }

    /// On a thread of its own (its own connections), so that a round over thousands of
    /// logins never delays an event.
    func start() {
        let thread = Thread { self.run() }
        thread.name = "stream-counts"
        thread.start()
    }

    private func run() -> Never {
        var connection: Connection?
        while true {
            do {
                if connection == nil {
                    connection = try Connection(conninfo: conninfo)
                }
                try reconcile(connection!)
                if !connection!.isHealthy { throw DatabaseError(kind: .unavailable, detail: "connection lost") }
                waitForNextRound()
            } catch {
                Log.warning("stream counts: \(error); retrying")
                connection = nil
                sleep(5)
            }
        }
    }

    /// One round: asks nginx about every login counted as streaming, corrects the counts.
    /// nginx's count of a new stream lags by up to a second or so (its worker processes
    /// tell each other in batches), so a count that disagrees is asked again two seconds
    /// later and corrected only if nginx says the same twice.
    func reconcile(_ connection: Connection) throws {
        let rows = try connection.execute("select login_id, open, counted_from from app.event_streams_to_check()").rows
        guard let countedFrom = rows.first?.string("counted_from") else { return }
        var agreed: [(login: String, open: Int)] = [], disagreed: [(login: String, open: Int)] = []
        for row in rows {
            guard let login = row.string("login_id"), let counted = row.int("open") else { continue }
            let open = try nchan.subscribers(of: EventChannels.login(login))
            if open == counted { agreed.append((login, open)) } else { disagreed.append((login, open)) }
        }
        // A disagreement is asked again on many new connections at once and two seconds
        // later (the highest answer each time): a single worker's answer can be 0 for a live
        // stream, and nginx's count of a new stream lags. Corrected only if both agree.
        if !disagreed.isEmpty {
            var confirmed: [(login: String, open: Int)] = []
            for (login, _) in disagreed {
                confirmed.append((login, try nchan.subscribersAskingEveryWorker(of: EventChannels.login(login), tries: Self.tries)))
            }
            sleep(2)
            for (login, open) in confirmed {
                if try nchan.subscribersAskingEveryWorker(of: EventChannels.login(login), tries: Self.tries) == open {
                    agreed.append((login, open))
                }
            }
        }
        let logins = agreed.map(\.login), counts = agreed.map { String($0.open) }
        let fixed = try connection.execute("""
            select logins_wrong, streams_missed
              from app.reconcile_event_streams(\(logins)::uuid[], \(counts)::int[], \(countedFrom)::timestamptz)
            """).first
        if let missed = fixed?.int("streams_missed"), missed > 0 {
            // The benchmark reads this line: how many starts and ends nginx never reported.
            Log.info("stream counts: \(missed) stream starts or ends were not reported; corrected for \(fixed?.int("logins_wrong") ?? 0) of \(rows.count) logins")
        }
    }

    /// Asks for a round now (`NOTIFY tideway_streams_check`, heard by the publisher).
    func checkNow() {
        wake.signal()
    }

    /// Until `interval` has passed or someone asks for a round now. Requests made during
    /// the round just done are all answered by the next one.
    private func waitForNextRound() {
        _ = wake.wait(timeout: .now() + interval)
        while wake.wait(timeout: .now()) == .success {}
    }
}
