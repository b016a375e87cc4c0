import Database
import Foundation

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
                try pump(connection)
            } catch {
                Log.warning("events: \(error); reconnecting")
                usleep(500_000)
            }
        }
    }

    private func pump(_ connection: Connection) throws -> Never {
        var descriptor = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
        while true {
            if poll(&descriptor, 1, 5000) < 0 && errno != EINTR {
                throw DatabaseError(kind: .unavailable, detail: "poll failed")
            }
            for note in try connection.notifications() {
                publish(note.channel, note.payload)
            }
            if !connection.isHealthy { throw DatabaseError(kind: .unavailable, detail: "listener connection lost") }
        }
    }

    func publish(_ channel: String, _ payload: String) {
        do {
            switch channel {
            case "tideway_changes":
                let body = JSON.object(["partition": .string(payload)]).serializedBytes()
                try nchan.send("POST", "/_publish/" + EventChannels.partition(payload), body: body,
                               headers: ["X-EventSource-Event": "change", "Content-Type": "application/json"])
            case "tideway_revoked":
                let channels = payload.split(separator: ",").filter { $0.hasPrefix("l") && $0.count == 33 }
                guard !channels.isEmpty else { return }
                try nchan.send("DELETE", "/_publish/" + channels.joined(separator: ","), body: [], headers: [:])
            default:
                return
            }
        } catch {
            // The events are hints (clients pull); a lost one costs a client a later pull.
            Log.warning("events: cannot publish to nginx: \(error)")
        }
    }
}
