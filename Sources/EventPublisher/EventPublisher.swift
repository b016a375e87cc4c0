import CoreMetrics
import Database
import Events
import Foundation
import Support
import TidewayJSON

/// Turns commit notifications into nchan publications: `tideway events`, one per server.
/// A change of a partition is published to its channel as an SSE `change` event naming the
/// partition; a revocation deletes the logins' channels, which closes their streams.
public final class EventPublisher {
    let conninfo: String
    let nchan: NchanClient
    let streamCounts: StreamCountReconciler

    /// `recountEvery`: seconds between checks of the stream counts against nginx's.
    public init(conninfo: String, publishSocket: String, recountEvery: Double = 30) {
        self.conninfo = conninfo
        self.nchan = NchanClient(socketPath: publishSocket)
        self.streamCounts = StreamCountReconciler(conninfo: conninfo, publishSocket: publishSocket, interval: recountEvery)
    }

    /// Runs until killed; reconnects to PostgreSQL and nginx after either restarts.
    public func run() -> Never {
        // nginx closes kept-alive publisher connections (after 1,000 requests, or a reload):
        // a write to one must fail with EPIPE and be retried, not end the process.
        signal(SIGPIPE, SIG_IGN)
        streamCounts.start()
        while true {
            do {
                let connection = try Connection(conninfo: conninfo)
                try connection.execute("listen tideway_changes")
                try connection.execute("listen tideway_revoked")
                Log.info("events: listening")
                // Listening first, then what was missed while no one listened: nothing
                // falls between the two (a change may be announced twice).
                try catchUp(connection)
                try pump(connection)
            } catch {
                Log.warning("events: \(error); reconnecting")
                usleep(500_000)
            }
        }
    }

    /// Seconds between checkpoints of the published positions, which are also the bound on
    /// how long a revoked login's stream stays open when its notification was missed.
    static let checkpointSeconds: Double = 5

    private func pump(_ connection: Connection) throws -> Never {
        var descriptor = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
        var nextCheckpoint = Date().addingTimeInterval(Self.checkpointSeconds)
        while true {
            let wait = Int32(max(0, min(nextCheckpoint.timeIntervalSinceNow, 5)) * 1000) + 1
            if poll(&descriptor, 1, wait) < 0 && errno != EINTR {
                throw DatabaseError(kind: .unavailable, detail: "poll failed")
            }
            let received = DispatchTime.now()
            for note in try connection.notifications() {
                publish(note.channel, note.payload)
                // Lag: from reading the notification (delivered at commit) to nginx's answer.
                Timer(label: "tideway_event_publish_lag_seconds").recordSeconds(Double(DispatchTime.now().uptimeNanoseconds - received.uptimeNanoseconds) / 1e9)
            }
            if !connection.isHealthy { throw DatabaseError(kind: .unavailable, detail: "listener connection lost") }
            if nextCheckpoint.timeIntervalSinceNow <= 0 {
                // Between notifications: every one that arrived so far is published.
                try connection.execute("select app.events_checkpoint()")
                try closeRevokedStreams(connection)
                nextCheckpoint = Date().addingTimeInterval(Self.checkpointSeconds)
            }
        }
    }

    /// On start: an event for every partition changed past its published position, and
    /// the streams of logins revoked meanwhile closed (migration 0081).
    func catchUp(_ connection: Connection) throws {
        let missed = try connection.execute("select p from app.events_to_catch_up() p").rows.compactMap { $0.string("p") }
        for partition in missed {
            publish("tideway_changes", partition)
        }
        Counter(label: "tideway_events_caught_up_total").increment(by: missed.count)
        if !missed.isEmpty { Log.info("events: announced \(missed.count) partitions changed while no publisher listened") }
        try closeRevokedStreams(connection)
    }

    /// Closes the open streams of revoked logins (a revocation whose notification was lost).
    func closeRevokedStreams(_ connection: Connection) throws {
        let channels = try connection.execute("select c from app.revoked_stream_channels() c").rows.compactMap { $0.string("c") }
        guard !channels.isEmpty else { return }
        for start in stride(from: 0, to: channels.count, by: 50) {
            publish("tideway_revoked", channels[start..<min(start + 50, channels.count)].joined(separator: ","))
        }
    }

    func publish(_ channel: String, _ payload: String) {
        do {
            switch channel {
            case "tideway_changes":
                let body = JSON.object(["partition": .string(payload)]).serializedBytes()
                try nchan.send("POST", "/_publish/" + EventChannels.partition(payload), body: body,
                               headers: ["X-EventSource-Event": "change", "Content-Type": "application/json"])
                Counter(label: "tideway_events_published_total", dimensions: [("kind", "change")]).increment()
            case "tideway_revoked":
                let channels = payload.split(separator: ",").filter { $0.hasPrefix("l") && $0.count == 33 }
                guard !channels.isEmpty else { return }
                try nchan.send("DELETE", "/_publish/" + channels.joined(separator: ","), body: [], headers: [:])
                Counter(label: "tideway_events_published_total", dimensions: [("kind", "revoke")]).increment(by: channels.count)
            default:
                return
            }
        } catch {
            // The events are hints (clients pull); a lost one costs a client a later pull.
            Log.warning("events: cannot publish to nginx: \(error)")
            Counter(label: "tideway_event_publish_errors_total").increment()
        }
    }
}
