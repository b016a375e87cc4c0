import Foundation
import TidewayModels

/// What a sync did.
public struct SyncReport: Sendable, Codable {
    public var pushed = 0
    public var applied = 0
    public var duplicates = 0
    public var rejections: [Rejection] = []
    public var pulled = 0
    public var forbidden: [String] = []
    public var reset: [String] = []
    /// Seconds spent pushing and pulling.
    public var pushSeconds = 0.0
    public var pullSeconds = 0.0
}

/// The offline-first client: a login, its local store, and the sync with the server.
///
///     let client = try TidewayClient(directory: appSupport, serverURL: "https://tideway.example.org")
///     try client.login(email: "officer@example.org", password: "…")
///     try client.open(partition: "agency=Gabon")
///     try client.store.insert(.from(report), collection: "reports", partition: "agency=Gabon")
///     let report = try client.sync()          // push the queue, pull every open partition
///
/// Every call is synchronous and safe from any thread; an app runs `sync()` off the main thread.
public final class TidewayClient: @unchecked Sendable {
    public let directory: URL
    let session: Session
    private let lock = NSLock()
    private var openStore: LocalStore?

    /// Changes per push (the contract allows 1,000).
    public var batchSize = 500
    /// A pause between pushes (a slow link, in tests and load runs).
    public var pauseBetweenBatches: Double = 0
    /// Called after a push's answer arrived and before it is recorded (tests kill the device here:
    /// the server applied the batch, the device never learnt it).
    public var afterPushAnswered: (@Sendable () -> Void)?
    /// Called after a photo upload was answered and before it leaves the queue (the same, for uploads).
    public var afterUploadAnswered: (@Sendable (Int) -> Void)?

    /// `directory` holds one SQLite file per login; `tokenStore` defaults to a 0600 file in it.
    public init(directory: URL, serverURL: String, caFile: String? = nil, tokenStore: (any TokenStore)? = nil) throws {
        self.directory = directory
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let tokens = tokenStore ?? FileTokenStore(path: directory.appendingPathComponent("tokens.json").path)
        session = try Session(http: HTTPTransport(baseURL: serverURL, caFile: caFile), tokenStore: tokens)
    }

    /// The signed-in user (from the token store: a restarted app is still signed in).
    public var user: AccountUser? { session.current?.user }

    /// The store of the signed-in login.
    public var store: LocalStore {
        get throws {
            try lock.withLock {
                if let openStore { return openStore }
                guard let user = session.current?.user else { throw TidewayError.signedOut }
                let store = try LocalStore(path: directory.appendingPathComponent("\(user.id).sqlite").path)
                openStore = store
                return store
            }
        }
    }

    @discardableResult
    public func login(email: String, password: String, device: String? = nil) throws -> AccountUser {
        lock.withLock { openStore = nil }
        return try session.login(email: email, password: password, device: device).user
    }

    /// Ends the login on the server and forgets its tokens; `wipe` also removes its local data.
    public func logout(wipe: Bool = false) throws {
        if wipe { try store.wipe() }
        session.logout()
        lock.withLock { openStore = nil }
    }

    public func open(partition: String) throws { try store.open(partition: partition) }

    /// Whether the app keeps the client off the network (the device's "airplane mode").
    public var isOffline: Bool {
        get { (try? store.meta("offline")) == "1" }
    }

    public func setOffline(_ offline: Bool) throws { try store.setMeta("offline", offline ? "1" : nil) }

    /// Sends the whole queue in order, in batches. A batch without an answer stays queued
    /// (its changeIds are kept, so the retry is answered `duplicate`).
    public func push() throws -> SyncReport {
        if isOffline { throw TidewayError.offline }
        let store = try store
        let clientId = try store.clientId
        var report = SyncReport()
        while true {
            let (batch, wire) = try store.nextPush(limit: min(batchSize, 1000))
            if batch.isEmpty { break }
            let answer: HTTPResponse
            do {
                let body = #"{"clientId":"# + JSONValue.string(clientId).text() + #","changes":"# + wire + "}"
                answer = try session.send("POST", "/api/v1/sync/push", body: Data(body.utf8), contentType: "application/json")
            } catch {
                try store.requeue()
                throw error
            }
            guard answer.status == 200 else {
                try store.requeue()
                throw answer.error
            }
            afterPushAnswered?()
            let results = try answer.json()["results"]?.arrayValue ?? []
            let rejections = try store.record(results: results, for: batch)
            report.pushed += batch.count
            report.applied += results.filter { $0["status"]?.stringValue == "applied" }.count
            report.duplicates += results.filter { $0["status"]?.stringValue == "duplicate" }.count
            report.rejections += rejections
            if results.count < batch.count { break }
            if pauseBetweenBatches > 0 { Thread.sleep(forTimeInterval: pauseBetweenBatches) }
        }
        return report
    }

    /// Pulls every open partition until `more` is false. `wait` > 0 is a long poll.
    public func pull(wait: Int = 0, limit: Int = 1000) throws -> SyncReport {
        if isOffline { throw TidewayError.offline }
        let store = try store
        var report = SyncReport()
        var waiting = wait
        while true {
            let open = try store.partitions().filter { $0.status == "open" }
            if open.isEmpty { return report }
            var cursors: [String: JSONValue] = [:]
            for partition in open { cursors[partition.partition] = partition.cursor.map(JSONValue.string) ?? .null }
            let answer = try session.send("POST", "/api/v1/sync/pull",
                                          json: ["partitions": .object(cursors), "limit": .int(Int64(limit)),
                                                 "wait": .int(Int64(waiting)), "clientId": .string(try store.clientId)],
                                          timeout: 60 + waiting)
            guard answer.status == 200 else { throw answer.error }
            let partitions = try answer.json()["partitions"]?.objectValue ?? [:]
            var more = false
            for (name, result) in partitions {
                switch result["status"]?.stringValue {
                case "ok":
                    let changes = result["changes"]?.arrayValue ?? []
                    try store.apply(changes: changes, partition: name, cursor: result["cursor"]?.stringValue)
                    report.pulled += changes.count
                    if result["more"]?.boolValue == true { more = true }
                case "forbidden":
                    try store.forbid(partition: name)
                    report.forbidden.append(name)
                case "reset":
                    try store.reset(partition: name)
                    report.reset.append(name)
                    more = true
                default:
                    try store.markInvalid(partition: name)
                }
            }
            if !more { return report }
            waiting = 0
        }
    }

    /// Push, pull, and push again what a reset kept. Records when it last succeeded, or the error.
    @discardableResult
    public func sync(wait: Int = 0) throws -> SyncReport {
        let store = try store
        do {
            var started = Date()
            var report = try push()
            report.pushSeconds = Date().timeIntervalSince(started)
            started = Date()
            let pulled = try pull(wait: wait)
            report.pullSeconds = Date().timeIntervalSince(started)
            report.pulled = pulled.pulled
            report.forbidden = pulled.forbidden
            report.reset = pulled.reset
            if try store.pendingCount() > 0 {
                let again = try push()
                report.pushed += again.pushed
                report.applied += again.applied
                report.duplicates += again.duplicates
                report.rejections += again.rejections
            }
            try store.setMeta("lastSync", ISO8601DateFormatter().string(from: Date()))
            try store.setMeta("lastError", nil)
            return report
        } catch {
            try? store.setMeta("lastError", "\(error)")
            throw error
        }
    }

    /// `sync` off the calling task (the calls block on the network and SQLite).
    @discardableResult
    public func syncInBackground(wait: Int = 0) async throws -> SyncReport {
        try await Task.detached { try self.sync(wait: wait) }.value
    }

    /// `uploadPhotos` off the calling task.
    @discardableResult
    public func uploadPhotosInBackground() async throws -> UploadReport {
        try await Task.detached { try self.uploadPhotos() }.value
    }

    /// A signed request to any API path (for what the library has no call for yet).
    public func request(_ method: String, _ path: String, json: JSONValue? = nil) throws -> HTTPResponse {
        try session.send(method, path, json: json)
    }
}
