import CoreMetrics
import Database
import Events
import Foundation
import Support
import Sync
import TidewayJSON
import Web

/// Turns commit notifications into nchan publications: `tideway events`, one per server.
/// A change of a partition is published to its channel as an SSE `change` event naming the
/// partition and, when they are few and small, carrying its new changes (EventChanges); a
/// revocation deletes the logins' channels, which closes their streams.
public final class EventPublisher {
    let conninfo: String
    /// Every nginx instance's publisher socket (one per instance).
    let nchan: NchanInstances
    let streamCounts: StreamCountReconciler

    /// Per partition, the number its last event stood at: the next event carries the changes
    /// after it. A partition not in here (since the start) gets a thin event first. Any number
    /// is safe here, even one whose event was lost: a client applies an event only at the
    /// cursor it names, and pulls otherwise.
    var published: [String: Int64] = [:]
    /// The partitions whose last event a stream received, on any nginx instance (nchan answered
    /// 201 Created; 202 Accepted when no stream listened and it only kept the event for
    /// resumes). Only their events read and carry the changes: the next event of a partition
    /// no stream heard is thin, after a read of its clock (`publishUnheard`), and its
    /// answer says whether a stream listens now. So a stream opened on such a partition may
    /// get one thin event first, and a resume with Last-Event-ID gets the events no stream
    /// heard thin (sync-protocol.md, "Change events"). Forgotten past `maxRemembered`.
    var heard: Set<String> = []
    /// Per partition, its channel's publishing path (a SHA-256 each: 4% of the publisher's
    /// CPU per event, made again at every event). Forgotten past `maxRemembered`.
    var publishPaths: [String: String] = [:]
    /// Every revocation up to this id (app.stream_revocations) has closed its streams.
    var revocationsHandled: Int64 = 0
    /// A revocation's notification arrived whose streams could not be closed (nginx refused,
    /// or its read and its payload both failed): until a read closes the revocations past
    /// `revocationsHandled`, no event goes out without that read (`publishUnheard`).
    var revocationsBehind = false
    /// `revocationsHandled` at the last two checkpoints, older first: the revocations closed
    /// again at checkpoints after they were handled (`recloseRecentRevocations`).
    var revocationsHandledAtCheckpoints: (older: Int64, last: Int64) = (0, 0)
    /// The connection that reads what events carry (the listening one only listens).
    var reader: Connection?
    var cursorKey: [UInt8] = []

    /// An event carries at most this many changes and `carryBytes` bytes of them; a bigger
    /// change stays a thin event and the client pulls. nchan keeps the last 64 events of a
    /// channel (Deploy/nginx), so this also bounds what one partition holds in its shared memory.
    static let maxCarriedChanges = 50
    public static let defaultCarryBytes = 16 * 1024
    /// 0: every event thin (no read per event), as before events carried changes.
    let carryBytes: Int
    /// Forgotten past this many partitions (then the next event of each is thin again).
    static let maxRemembered = 100_000
    /// Login channels closed per DELETE. nchan refuses (403) a channel id over
    /// `nchan_max_channel_id_length`, and the ids of a multi-channel request count as one:
    /// 30 login channels are 1,019 bytes with their commas, within even nchan's default of
    /// 1024 (Deploy/nginx's template sets 2048, for the streams); 31 are 1,053. No event goes
    /// out while a recorded revocation is not closed (nothing may be carried to a revoked
    /// login), and a restarted publisher closes them before its first: with 50 per request,
    /// one user with 31 or more logins losing a partition (moved to another agency, say)
    /// stopped every event for good, the restarts included.
    static let loginsPerDelete = 30

    /// The series recorded per event, made once (making one looks its series up by name).
    let publishLag = Timer(label: "tideway_event_publish_lag_seconds")
    let changesPublished = Counter(label: "tideway_events_published_total", dimensions: [("kind", "change")])
    let changesCarried = Counter(label: "tideway_events_carried_total")

    /// `publishSockets`: each nginx instance's publisher socket, at least one.
    /// `recountEvery`: seconds between checks of the stream counts against nginx's.
    public init(conninfo: String, publishSockets: [String], recountEvery: Double = 30, carryBytes: Int = defaultCarryBytes) {
        self.conninfo = conninfo
        self.carryBytes = carryBytes
        self.nchan = NchanInstances(socketPaths: publishSockets)
        self.streamCounts = StreamCountReconciler(conninfo: conninfo, publishSockets: publishSockets, interval: recountEvery)
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
                cursorKey = try Secrets.load(from: connection).cursorKey
                // This connection writes only the checkpoints (positions and revocations
                // handled), and losing the last ones to a crash only announces and closes again
                // what they covered (thin events, closed streams reopened): no need to wait for
                // the disk, whose flush a writer's commit would otherwise queue behind.
                try connection.execute("set synchronous_commit = off")
                try connection.execute("listen tideway_changes")
                try connection.execute("listen tideway_revoked")
                try connection.execute("listen tideway_streams_check")
                Log.info("events: listening")
                // Listening first, then what was missed while no one listened: nothing
                // falls between the two (a change may be announced twice).
                try catchUp(connection)
                if reader == nil { warmReader() }
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
        // A statement on this connection (the checkpoint) reads any notification that arrives
        // meanwhile into libpq, where poll() cannot see it: look there first, without waiting.
        var maybeBuffered = false
        while true {
            let wait = maybeBuffered ? 0 : Int32(max(0, min(nextCheckpoint.timeIntervalSinceNow, 5)) * 1000) + 1
            maybeBuffered = false
            if poll(&descriptor, 1, wait) < 0 && errno != EINTR {
                throw DatabaseError(kind: .unavailable, detail: "poll failed")
            }
            let received = DispatchTime.now()
            // Every change of a batch committed before the batch arrived, so before the
            // snapshot that read its partition's first one: one read per partition covers it,
            // that of every collection the batch named for it (nil: one named none).
            let notes = try connection.notifications()
            let notices = notes.map { $0.channel == "tideway_changes" ? ChangeNotice(payload: $0.payload) : nil }
            var changed: [String: Set<String>] = [:]  // per partition, the collections named
            var whole: Set<String> = []  // the partitions a notification named no collection of
            var clocks: [String: Int64] = [:]  // per partition, the highest clock named
            var unclocked: Set<String> = []  // the partitions a notification named no clock of
            for case let notice? in notices {
                changed[notice.partition, default: []].formUnion(notice.collection.map { [$0] } ?? [])
                if notice.collection == nil { whole.insert(notice.partition) }
                if let clock = notice.clock {
                    clocks[notice.partition] = max(clocks[notice.partition] ?? 0, clock)
                } else {
                    unclocked.insert(notice.partition)
                }
            }
            // The batch's revocations before any of its changes: a revocation committed before
            // a change is notified before it (PostgreSQL delivers notifications in commit
            // order), so its streams are closed before that change's event, read or not
            // (publishUnheard says why this is the guarantee the read gave). Closing streams of
            // a revocation committed after a change early only costs their clients a reconnect.
            for note in notes where note.channel == "tideway_revoked" {
                publish(note.channel, note.payload)
                publishLag.recordSeconds(received.secondsElapsed)
            }
            for (note, notice) in zip(notes, notices) {
                if note.channel == "tideway_streams_check" {
                    streamCounts.checkNow()
                    continue
                }
                guard let partition = notice?.partition, let collections = changed.removeValue(forKey: partition) else { continue }
                do {
                    try publishChange(partition, collections: whole.contains(partition) ? nil : collections,
                                      clock: unclocked.contains(partition) ? nil : clocks[partition])
                } catch {
                    noteLost(error)
                }
                // Lag: from reading the notification (delivered at commit) to nginx's answer.
                publishLag.recordSeconds(received.secondsElapsed)
            }
            if !connection.isHealthy { throw DatabaseError(kind: .unavailable, detail: "listener connection lost") }
            if nextCheckpoint.timeIntervalSinceNow <= 0 {
                // Between notifications: every one that arrived so far is published.
                try connection.execute("select app.events_checkpoint()")
                try closeRecordedRevocations(connection)
                try recloseRecentRevocations(connection)
                try closeRevokedStreams(connection)
                nextCheckpoint = Date().addingTimeInterval(Self.checkpointSeconds)
                maybeBuffered = true
            }
        }
    }

    /// On start: an event for every partition changed past its published position (thin:
    /// what a client missed is pulled), and the streams of logins revoked meanwhile closed
    /// (migrations 0081, 0082).
    func catchUp(_ connection: Connection) throws {
        try closeStreams(revokedIn: connection.execute(Self.revocations(after: revocationsHandled)).rows)
        revocationsBehind = false
        let missed = try connection.execute("select p from app.events_to_catch_up() p").rows.compactMap { $0.string("p") }
        for partition in missed {
            publishThin(partition)
        }
        Counter(label: "tideway_events_caught_up_total").increment(by: missed.count)
        if !missed.isEmpty { Log.info("events: announced \(missed.count) partitions changed while no publisher listened") }
        try closeRevokedStreams(connection)
    }

    /// Closes the recorded revocations no notification brought (none does while the listening
    /// connection lives: a revocation is recorded and notified in one transaction), within a
    /// checkpoint: an event of a partition no stream heard reads nothing since the notifications
    /// name the clock (`publishUnheard`), so no longer closes them on its way.
    func closeRecordedRevocations(_ connection: Connection) throws {
        let recorded = try connection.execute(Self.revocations(after: revocationsHandled)).rows
        do {
            try closeStreams(revokedIn: recorded)
        } catch {
            revocationsBehind = true
            noteLost(error)
        }
    }

    /// Closes the streams of the revocations handled since the checkpoint before last once
    /// more, then forgets those handled before it. A stream whose subscription a worker
    /// authorized just before a revocation, but which nginx opened only after the revocation
    /// closed that login's channels (milliseconds), would otherwise stay open and receive
    /// the partition's carried changes; so each revocation is closed again at the next two
    /// checkpoints, the second at least `checkpointSeconds` after it was handled. A stream
    /// of a login that keeps its rights just reconnects.
    func recloseRecentRevocations(_ connection: Connection) throws {
        let (older, last) = revocationsHandledAtCheckpoints
        try connection.execute("select app.forget_stream_revocations(\(older))")
        let recent = try connection.execute(Self.revocations(after: older)).rows
        let handled = recent.filter { ($0.int64("id") ?? .max) <= revocationsHandled }
        do {
            try closeLoginChannels(handled.compactMap { $0["channels"] }.flatMap { $0.split(separator: ",") })
        } catch {
            noteLost(error)
        }
        revocationsHandledAtCheckpoints = (last, revocationsHandled)
    }

    /// The recorded revocations past id `handled`, in id order: `id, channels`.
    static func revocations(after handled: Int64) -> SQL {
        "select id, channels from app.stream_revocations_after(\(handled))"
    }

    /// Closes the open streams of revoked logins (a revocation whose notification was lost).
    func closeRevokedStreams(_ connection: Connection) throws {
        let channels = try connection.execute("select c from app.revoked_stream_channels() c").rows.compactMap { $0.string("c") }
        do {
            try closeLoginChannels(channels.map { Substring($0) })
        } catch {
            noteLost(error)
        }
    }

    /// Closes the streams of the revocations `rows` (id, channels) name, in id order, and
    /// remembers the last one closed. Throws when nginx refuses: nothing may be carried then.
    func closeStreams(revokedIn rows: [Row]) throws {
        for row in rows {
            guard let id = row.int64("id"), let channels = row["channels"] else { continue }
            try closeStreams(revokedThrough: id, channels: channels)
        }
    }

    /// Closes the revocations a read's first row names (`revoked_through`, `revoked_channels`).
    func closeStreams(revokedIn start: Row?) throws {
        if let start, let through = start.int64("revoked_through"), let channels = start["revoked_channels"] {
            try closeStreams(revokedThrough: through, channels: channels)
        }
    }

    /// Closes `channels` (comma-separated), those of the revocations up to id `id`, unless
    /// they were handled already, and remembers `id`.
    func closeStreams(revokedThrough id: Int64, channels: String) throws {
        if id > revocationsHandled {
            try closeLoginChannels(channels.split(separator: ","))
            revocationsHandled = id
        }
    }

    /// Deletes logins' own channels ("l" + 32 hex digits; anything else is ignored),
    /// `loginsPerDelete` per request: nchan ends every stream that listens on one.
    func closeLoginChannels(_ channels: [Substring]) throws {
        let logins = channels.filter { $0.hasPrefix("l") && $0.count == 33 }
        for start in stride(from: 0, to: logins.count, by: Self.loginsPerDelete) {
            try nchan.send("DELETE", "/_publish/" + logins[start..<min(start + Self.loginsPerDelete, logins.count)].joined(separator: ","),
                           body: [], headers: [:])
        }
        Counter(label: "tideway_events_published_total", dimensions: [("kind", "revoke")]).increment(by: logins.count)
    }

    /// A change of `partition`: the changes since its last event, read in one snapshot with
    /// the revocations not handled yet (closed first, so that no stream of a login that lost
    /// the partition before these changes receives them), or a thin event.
    /// `collections`: those the notifications named (nil: any may have changed); `clock`: the
    /// highest clock they named, when every one named one.
    func publishChange(_ partition: String, collections: Set<String>?, clock notified: Int64?) throws {
        guard carryBytes > 0, let parsed = Partition(partition) else { return publishThin(partition) }
        guard heard.contains(partition), let since = published[partition] else {
            return try publishUnheard(partition, clock: notified)
        }
        let (clock, carried, start): (Int64, EventChanges.Carried?, Row?)
        do {
            (clock, carried, start) = try EventChanges.read(
                readerConnection(), partition: parsed, collections: collections, since: since, revocationsAfter: revocationsHandled,
                maxChanges: Self.maxCarriedChanges, maxBytes: carryBytes, key: cursorKey)
        } catch {
            Log.warning("events: cannot read \(partition)'s changes: \(error); publishing a thin event")
            reader = nil
            return publishThin(partition)
        }
        try closeStreams(revokedIn: start)
        revocationsBehind = false
        // Announced already: an earlier event carried this change (it read a later snapshot).
        if clock <= since { return }
        if published.count >= Self.maxRemembered { published = [:] }
        guard let carried else {
            publishThin(partition)
            published[partition] = clock
            return
        }
        // The changes are JSON text already (rendered by PostgreSQL, as in a pull).
        let fields: [String] = [
            #"{"partition":"# + JSON.string(partition).serialized(),
            #","after":"# + JSON.string(carried.after).serialized(),
            #","cursor":"# + JSON.string(carried.cursor).serialized(),
            #","changes":["# + carried.changes.joined(separator: ","),
            "]}",
        ]
        let body = fields.joined()
        let reached = try nchan.send("POST", publishPath(partition), body: Array(body.utf8),
                                     headers: ["X-EventSource-Event": "change", "Content-Type": "application/json"])
        published[partition] = clock
        hear(partition, reached)
        changesPublished.increment()
        changesCarried.increment()
    }

    /// An event of a partition whose last event no stream heard (or its first since the
    /// start): thin, and `published` keeps its meaning (the next carried event's `after`; no
    /// second event for a change announced already). The changes and the reader's claims read
    /// for nobody were ~0.2–0.3 ms of the reading backend's CPU per lone push
    /// (docs/performance/round-13.md, "What a write's event costs"); the clock alone still
    /// 0.08–0.18 ms, and no read at all when the notifications named it (`notified`, app.ticks:
    /// docs/performance/round-16.md, "A thin event without a read").
    ///
    /// Why the notified clock keeps what the read gave. The number: the writer held the
    /// partition's clock row locked from its first tick to its commit, so every change up to
    /// the named clock is committed when its notification arrives; if the transaction ticked
    /// the partition again later, the number is lower than its committed clock, which only
    /// makes the next event start earlier (a carried event's `after` is then a cursor its
    /// client may not hold: it pulls) or announce again (events are hints). A higher number
    /// than committed is impossible, and only that could hide a change. The revocations: the
    /// read closed those recorded before its snapshot; a revocation is recorded and notified
    /// in one transaction (app.notify_revoked), and notifications arrive in commit order on
    /// the one listening connection, so every revocation committed before the write was
    /// notified before it and closed first (`pump`, `publish`); one committed in the write's
    /// own transaction is no earlier than the change, as with one committed just after it.
    /// A revocation notified but not closed (`revocationsBehind`) sends the event back to the
    /// read. A notification is lost only with the listening connection, and `catchUp` then
    /// closes the recorded revocations before any event, as before.
    func publishUnheard(_ partition: String, clock notified: Int64?) throws {
        let clock: Int64
        if let notified, !revocationsBehind {
            clock = notified
        } else {
            let start: Row?
            do {
                (clock, start) = try EventChanges.clock(readerConnection(), partition: partition, revocationsAfter: revocationsHandled)
            } catch {
                Log.warning("events: cannot read \(partition)'s clock: \(error); publishing a thin event")
                reader = nil
                published[partition] = nil
                return publishThin(partition)
            }
            try closeStreams(revokedIn: start)
            revocationsBehind = false
        }
        if let since = published[partition], clock <= since { return }
        if published.count >= Self.maxRemembered { published = [:] }
        published[partition] = clock
        publishThin(partition)
    }

    /// Remembers whether a stream received `partition`'s last event.
    func hear(_ partition: String, _ reached: Bool) {
        if !reached {
            heard.remove(partition)
        } else {
            if heard.count >= Self.maxRemembered { heard = [] }
            heard.insert(partition)
        }
    }

    /// The connection that reads what events carry, opened when first needed, its reads
    /// without BEGIN (`EventChanges.session`).
    func readerConnection() throws -> Connection {
        if let reader { return reader }
        let connection = try Connection(conninfo: conninfo)
        _ = try connection.pipeline(EventChanges.session)
        reader = connection
        return connection
    }

    /// Opens the reading connection at start and reads a partition with no changes both ways
    /// an event of an agency reads (its reports alone, and the whole partition), read-only,
    /// publishing nothing: the first event after a start paid ~16–24 ms more of its backend's
    /// CPU (the connection opened, app.start_event_read compiled, the reads planned;
    /// docs/performance/round-11.md, "A restart's first push and event"). Best effort: a failure
    /// leaves the reader to be opened by the first event, as before.
    func warmReader() {
        let started = DispatchTime.now()
        do {
            let connection = try readerConnection()
            _ = try EventChanges.clock(connection, partition: WarmUp.nowhere.description, revocationsAfter: revocationsHandled)
            for collections: Set<String>? in [["reports"], nil] {
                _ = try EventChanges.read(connection, partition: WarmUp.nowhere, collections: collections, since: 0,
                                          revocationsAfter: revocationsHandled, maxChanges: Self.maxCarriedChanges,
                                          maxBytes: carryBytes, key: cursorKey)
            }
            let took = started.secondsElapsed * 1000
            Log.info("events: reader warmed in \(String(format: "%.1f", took)) ms")
        } catch {
            Log.warning("events: reader not warmed: \(error)")
            reader = nil
        }
    }

    func publishPath(_ partition: String) -> String {
        if let path = publishPaths[partition] { return path }
        let path = "/_publish/" + EventChannels.partition(partition)
        if publishPaths.count >= Self.maxRemembered { publishPaths = [:] }
        publishPaths[partition] = path
        return path
    }

    /// An event naming only the partition: its subscribers pull.
    func publishThin(_ partition: String) {
        do {
            let body = JSON.object(["partition": .string(partition)]).serializedBytes()
            hear(partition, try nchan.send("POST", publishPath(partition), body: body,
                                           headers: ["X-EventSource-Event": "change", "Content-Type": "application/json"]))
            changesPublished.increment()
        } catch {
            noteLost(error)
        }
    }

    func noteLost(_ error: any Error) {
        // The events are hints (clients pull); a lost one costs a client a later pull.
        Log.warning("events: cannot publish to nginx: \(error)")
        Counter(label: "tideway_event_publish_errors_total").increment()
    }

    func publish(_ channel: String, _ payload: String) {
        do {
            switch channel {
            case "tideway_revoked":
                // The recorded revocations, so that the next change's read does not close the
                // same streams again (their reconnects); the payload when they cannot be read.
                // Closed at once in any case: an event of a change committed after it may be
                // published with no read (publishUnheard).
                let wasBehind = revocationsBehind
                revocationsBehind = true
                do {
                    let recorded = try readerConnection().execute(Self.revocations(after: revocationsHandled)).rows
                    try closeStreams(revokedIn: recorded)
                    // Its id below one handled already (ids are taken before commit, so two
                    // revocations may commit out of order): what closes it is its notification.
                    if !recorded.contains(where: { $0["channels"] == payload }) {
                        try closeLoginChannels(payload.split(separator: ","))
                    }
                    revocationsBehind = false
                } catch let error as DatabaseError {
                    Log.warning("events: cannot read the revocations: \(error)")
                    reader = nil
                    try closeLoginChannels(payload.split(separator: ","))
                    revocationsBehind = wasBehind
                }
            default:
                return
            }
        } catch {
            noteLost(error)
        }
    }
}
