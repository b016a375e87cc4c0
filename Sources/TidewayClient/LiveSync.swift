import Foundation
import TidewayModels

/// Reconnect delays: exponential from `base`, capped, with full jitter (a fleet of devices
/// coming back from sea does not reconnect in step).
public struct Backoff: Sendable {
    public var base: Double = 0.5
    public var cap: Double = 30

    public init(base: Double = 0.5, cap: Double = 30) {
        self.base = base
        self.cap = cap
    }

    /// The delay before attempt `attempt` (1, 2, …): a random value in [d/2, d], d = min(cap, base·2^(attempt−1)).
    public func delay(attempt: Int) -> Double {
        let ceiling = min(cap, base * pow(2, Double(max(0, min(attempt - 1, 30)))))
        return Double.random(in: (ceiling / 2)...ceiling)
    }
}

/// Server-Sent Events, parsed as the bytes come (`event:`, `data:`, `id:`, comments).
struct EventStreamParser {
    private var buffer = Data()
    private var fields: [String: String] = [:]

    /// The complete events in `chunk` (name, data, id).
    mutating func feed(_ chunk: Data) -> [(event: String, data: String, id: String?)] {
        buffer.append(chunk)
        var events: [(String, String, String?)] = []
        while let newline = buffer.firstIndex(of: 10) {
            var line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
            buffer.removeSubrange(buffer.startIndex...newline)
            if line.hasSuffix("\r") { line.removeLast() }
            if line.isEmpty {
                if let data = fields["data"] { events.append((fields["event"] ?? "message", data, fields["id"])) }
                fields = [:]
            } else if !line.hasPrefix(":") {
                let parts = line.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
                var value = parts.count > 1 ? String(parts[1]) : ""
                if value.hasPrefix(" ") { value.removeFirst() }
                let name = String(parts[0])
                fields[name] = name == "data" && fields["data"] != nil ? fields["data"]! + "\n" + value : value
            }
        }
        return events
    }
}

/// How a live sync learnt of a change. `carried`: an event carried the changes, which were
/// applied without a pull.
public enum SyncTrigger: String, Sendable, Codable {
    case start, events, carried, poll, local
}

/// What `live` reports as it goes.
public enum LiveEvent: Sendable {
    /// The event stream is open (changes now arrive through it).
    case streamOpen
    /// The event stream ended or could not open; long polls carry on meanwhile.
    case streamDown(String)
    /// A sync ran.
    case synced(SyncReport, SyncTrigger)
    case failed(String)
}

extension TidewayClient {
    static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// Keeps the store in step with the server for `seconds` (or until `stop` answers true):
    /// the event stream (`/sync/events` with `Last-Event-ID`) says when to pull; while it is
    /// unavailable, long polls (`wait`) do; reconnects back off with jitter. Queued local
    /// changes are pushed as they come.
    public func live(seconds: Double, blockEvents: Bool = false, backoff: Backoff = Backoff(),
                     stop: @escaping @Sendable () -> Bool = { false },
                     onEvent: @escaping @Sendable (LiveEvent) -> Void) throws {
        let store = try store
        let deadline = Date().addingTimeInterval(seconds)
        let state = LiveState()
        let finished: @Sendable () -> Bool = { stop() || Date() >= deadline }
        let partitions = try store.partitions().filter { $0.status == "open" }.map(\.partition)
        let query = partitions.map { "partition=" + ($0.addingPercentEncoding(withAllowedCharacters: Self.unreserved) ?? $0) }
            .joined(separator: "&")
        let path = (blockEvents ? "/api/v1/sync/events-blocked?" : "/api/v1/sync/events?") + query

        let stream = Thread { [self] in
            var attempt = 0
            var parser = EventStreamParser()
            while !finished() && !state.stopped {
                parser = EventStreamParser()
                var headers = ["Accept: text/event-stream"]
                if let last = try? store.meta("lastEventId") { headers.append("Last-Event-ID: " + last) }
                let opened = Date()
                var reason = "the stream ended"
                do {
                    let answer = try session.send("GET", path, headers: headers, timeout: 0, stream: { chunk in
                        guard state.open else { return true }
                        for event in parser.feed(chunk) {
                            if let id = event.id { try? store.setMeta("lastEventId", id) }
                            guard event.event == "change" else { continue }
                            // An event carrying the changes from our cursor needs no pull.
                            if let applied = try? Self.applyCarried(event.data, to: store) {
                                var report = SyncReport()
                                report.pulled = applied
                                onEvent(.synced(report, .carried))
                            } else {
                                state.signal()
                            }
                        }
                        return !finished() && !state.stopped
                    }, onHeaders: { status in
                        if status == 200 {
                            state.open = true
                            onEvent(.streamOpen)
                            state.signal()  // what changed before the stream opened
                        }
                    }, shouldStop: { finished() || state.stopped })
                    if answer.status != 200 { reason = "the stream was refused (\(answer.status))" }
                } catch {
                    reason = "\(error)"
                }
                let wasOpen = state.open
                state.open = false
                state.attempted = true
                if finished() || state.stopped { break }
                onEvent(.streamDown(reason))
                attempt = wasOpen && Date().timeIntervalSince(opened) > 10 ? 1 : attempt + 1
                Thread.sleep(forTimeInterval: backoff.delay(attempt: attempt))
            }
        }
        stream.start()
        defer { state.stopped = true }

        var failures = 0
        func run(_ trigger: SyncTrigger, _ body: () throws -> SyncReport) {
            do {
                let report = try body()
                failures = 0
                if trigger != .poll || report.pulled > 0 || !report.forbidden.isEmpty || !report.reset.isEmpty {
                    onEvent(.synced(report, trigger))
                }
            } catch {
                failures += 1
                onEvent(.failed("\(error)"))
                Thread.sleep(forTimeInterval: min(max(0, deadline.timeIntervalSinceNow), backoff.delay(attempt: failures)))
            }
        }
        run(.start) { try sync() }
        // The stream's first outcome decides how to wait: a long poll started just before the
        // stream opens would otherwise carry the next change instead of the stream.
        let firstOutcome = Date().addingTimeInterval(10)
        while !state.open && !state.attempted && Date() < firstOutcome && !finished() {
            Thread.sleep(forTimeInterval: 0.02)
        }
        while !finished() {
            let remaining = deadline.timeIntervalSinceNow
            if state.open {
                if state.wait(timeout: min(1, remaining)) {
                    run(.events) { try sync() }
                } else if (try? store.pendingCount()) ?? 0 > 0 {
                    run(.local) { try sync() }
                }
            } else {
                if (try? store.pendingCount()) ?? 0 > 0 { run(.local) { try push() } }
                let wait = Int(min(5, max(1, remaining.rounded(.down))))
                run(.poll) { try pull(wait: wait) }
            }
        }
    }
}

extension TidewayClient {
    /// Applies what a change event carries (sync-protocol.md, "Change events") when the
    /// store's cursor for its partition is the event's `after`: the number of changes
    /// applied, or nil when the client must pull (a thin event, or any other cursor).
    static func applyCarried(_ data: String, to store: LocalStore) throws -> Int? {
        let event = try JSONValue.decode(data)
        guard let partition = event["partition"]?.stringValue, let after = event["after"]?.stringValue,
              let cursor = event["cursor"]?.stringValue, let changes = event["changes"]?.arrayValue,
              try store.apply(carried: changes, partition: partition, after: after, cursor: cursor)
        else { return nil }
        return changes.count
    }
}

/// What the stream thread and the sync loop share.
final class LiveState: @unchecked Sendable {
    private let lock = NSLock()
    private let semaphore = DispatchSemaphore(value: 0)
    private var _open = false
    private var _stopped = false
    private var _attempted = false

    var open: Bool {
        get { lock.withLock { _open } }
        set { lock.withLock { _open = newValue } }
    }

    var stopped: Bool {
        get { lock.withLock { _stopped } }
        set { lock.withLock { _stopped = newValue } }
    }

    /// The stream was tried at least once and did not open (or ended).
    var attempted: Bool {
        get { lock.withLock { _attempted } }
        set { lock.withLock { _attempted = newValue } }
    }

    func signal() { semaphore.signal() }

    /// Waits for a signal; several signals that came meanwhile count as one pull.
    func wait(timeout: Double) -> Bool {
        guard semaphore.wait(timeout: .now() + max(0, timeout)) == .success else { return false }
        while semaphore.wait(timeout: .now()) == .success {}
        return true
    }
}
