import Database
import Foundation
import Support
import Synchronization
import TidewayJSON
import Web

/// Records, for pulls that name their device (`clientId`), when the device last pulled and
/// where its cursors stand (app.devices.pulled_through), from which the inspector tells
/// its cursor age. Most pulls are idle polls that move nothing: a worker writes a device's
/// row only when its positions moved, or when a minute has passed since it last did, so
/// "last pull" stays within a minute of the truth without a write per poll.
final class DevicePulls: Sendable {
    private struct Written {
        var positions: [String: Int64]
        var at: Date
    }

    private let written = Mutex<[String: Written]>([:])
    static let refreshSeconds: Double = 60
    /// Forgotten all at once beyond this many devices: a write each, then quiet again.
    static let maxRemembered = 50_000

    /// Never fails the pull: a lost record only makes the inspector a little stale.
    func record(_ context: RequestContext, clientID: String, positions: [String: Int64]) {
        guard let token = context.bearerToken else { return }
        // The token stands for its login (user), so one user's clientId never hides another's.
        let key = Crypto.base64url(Crypto.sha256(token)) + " " + clientID
        let now = Date()
        let due = written.withLock { written -> Bool in
            if let last = written[key], last.positions == positions, now.timeIntervalSince(last.at) < Self.refreshSeconds { return false }
            if written.count >= Self.maxRemembered { written.removeAll() }
            written[key] = Written(positions: positions, at: now)
            return true
        }
        guard due else { return }
        let json = "{" + positions.sorted { $0.key < $1.key }
            .map { JSON.string($0.key).serialized() + ":" + String($0.value) }.joined(separator: ",") + "}"
        do {
            try context.withAPIClaims { tx in
                // Losing this to a crash costs nothing: no need to wait for the disk.
                _ = try tx.queries([
                    "set local synchronous_commit = off",
                    """
                    insert into app.devices (user_id, client_id, last_pull, pulled_through)
                    values (app.uid(), \(clientID), now(), \(json)::jsonb)
                    on conflict (user_id, client_id) do update set last_pull = now(),
                        pulled_through = coalesce(app.devices.pulled_through, '{}'::jsonb) || excluded.pulled_through
                    """,
                ])
            }
        } catch {
            written.withLock { _ = $0.removeValue(forKey: key) }
            Log.warning("device pull not recorded: \(AppError.from(error, requestID: context.requestID).message)", requestID: context.requestID)
        }
    }
}
