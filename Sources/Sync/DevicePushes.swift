import Foundation
import Synchronization
import Web

/// When this worker process last wrote each pushing device's row (app.devices: last push and
/// app version, which the sync inspector and a user's page show, to the minute), so that a
/// push writes it only when a minute has passed since, or when it carries an app version
/// the row was not last written with. A lone push then mostly skips app.note_device_push
/// (~0.04 ms of PostgreSQL, docs/performance/round-17.md, "The device's row a
/// minute coarse"), as a pull skips its device record (`DevicePulls`).
///
/// Nothing in a push reads the row (the first-push check reads the push log; the history
/// names the device from the push's clientId), so only its readers' freshness counts: the
/// row's last push is never more than `refreshSeconds` behind a push this worker answered.
/// Each worker process remembers its own writes, so with several a device's row is written
/// at most once a minute by each one that serves it; a device's first push on a worker
/// always writes (a new device's row appears at once), and so does a new app version.
final class DevicePushes: Sendable {
    /// A device as one login (its token's hash: the token stands for its user) names it.
    struct Key: Hashable {
        let login: Int
        let clientID: String

        init(digest: [UInt8], clientID: String) {
            login = Tokens.memoryKey(digest)
            self.clientID = clientID
        }
    }

    private struct Written {
        let appVersion: String
        let at: Date
    }

    private let written = Mutex<[Key: Written]>([:])
    static let refreshSeconds: Double = 60
    /// Forgotten all at once beyond this many devices: a write each, then quiet again.
    static let maxRemembered = 50_000

    /// Whether a push at `now` with `appVersion` ("" when the device sent none: the row keeps
    /// the version it has) must write the device's row.
    func due(_ key: Key, appVersion: String, now: Date = Date()) -> Bool {
        written.withLock { written in
            guard let last = written[key] else { return true }
            // A clock set back counts as stale, never as fresh for longer.
            let age = now.timeIntervalSince(last.at)
            guard age >= 0, age < Self.refreshSeconds else { return true }
            return !appVersion.isEmpty && appVersion != last.appVersion
        }
    }

    /// The push that wrote the row (`due` at `at`) committed: a push that failed wrote nothing
    /// and is not remembered.
    func wrote(_ key: Key, appVersion: String, at: Date) {
        written.withLock { written in
            let known = appVersion.isEmpty ? written[key]?.appVersion ?? "" : appVersion
            if written.count >= Self.maxRemembered, written[key] == nil { written.removeAll() }
            written[key] = Written(appVersion: known, at: at)
        }
    }
}
