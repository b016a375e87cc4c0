import CoreMetrics
import FastCGI
import Foundation
import Support
import TidewayJSON
import Web

/// `/api/v1/sync/...`: partitions, pull, push.
public enum SyncRoutes {
    public static func register(_ router: inout Router, service: SyncService) {
        router.get("/api/v1/sync/partitions", partitions)
        router.post("/api/v1/sync/pull") { try PullRoute.pull($0, service) }
        router.post("/api/v1/sync/push") { try PushRoute.push($0, service) }
    }

    /// Every partition the caller may open now, with read and write rights.
    static func partitions(_ context: RequestContext) throws -> HTTPResponse {
        let rows = try context.asAPICaller(readOnly: true) { tx, _ in
            try tx.query("""
                select p, app.can_read(p) as read,
                       app.can_write(p, case app.partition_kind(p) when 'agency' then 'reports' when 'user' then 'users'
                                            when 'conversation' then 'chatMessages' when 'team' then 'tasks' else '' end) as write
                  from (select 'agency=' || key as p from app.agencies
                        union all select 'user=' || app.uid()
                        union all select 'all-users=all-the-users'
                        union all select 'conversation=' || conversation_id from app.conversation_members
                         where user_id = app.uid() and active
                        union all select jsonb_object_keys(app.team_partitions(1))) candidates
                 order by p
                """, thenCommit: true).rows
        }
        let list = rows.filter { $0.bool("read") == true }.map { row -> JSON in
            ["partition": .string(row["p"] ?? ""), "read": true, "write": .bool(row.bool("write") == true)]
        }
        return .json(["partitions": .array(list)])
    }
}

/// `POST /api/v1/sync/push`.
enum PushRoute {
    static func push(_ context: RequestContext, _ service: SyncService) throws -> HTTPResponse {
        // Strings up to the body limit parse: a string too long for a document is its
        // change's `too_large`, not the whole push's 400 (InlinePictures.checkStrings), and
        // inline photo pictures may be as long as a document; every other string is held
        // to the usual limit there.
        let body = try context.jsonObject(allowing: ["clientId", "changes", "appVersion"],
                                          stringBytes: context.app.config.limits.bodyBytes)
        guard let clientID = body["clientId"]?.stringValue, !clientID.isEmpty, clientID.utf8.count <= 200 else {
            throw AppError.badRequest("clientId must be a string of 1–200 bytes")
        }
        context.loggedClientID = clientID
        guard case .array(let raw)? = body["changes"] else { throw AppError.badRequest("changes must be an array") }
        let limits = context.app.config.limits
        guard raw.count <= limits.changesPerPush else {
            throw AppError(.tooLarge, "at most \(limits.changesPerPush) changes per push")
        }
        let checkStrings = InlinePictures.mayRefuse(bodyBytes: context.jsonBodyBytes ?? .max, limit: limits.stringBytes,
                                                    documentLimit: limits.documentBytes)
        let inputs: [WritePath.Input] = try raw.map { value in
            let changeID = try Change.changeID(of: value)
            return Result { () throws(ChangeRejection) in
                if checkStrings {
                    try InlinePictures.checkStrings(of: value, limit: limits.stringBytes, documentLimit: limits.documentBytes)
                }
                return try Change(value, changeID: changeID)
            }
                .mapError { WritePath.Refused(changeID: changeID, rejection: $0) }
        }
        let appVersion: String
        switch body["appVersion"] {
        case nil, .null?: appVersion = ""
        case .string(let text)?: appVersion = String(text.prefix(100))
        default: throw AppError.badRequest("appVersion must be a string or null")
        }
        let writeLimits = WritePath.Limits(documentBytes: limits.documentBytes)
        // Presence, when due, in the push's own transaction: a second one would be a second
        // WAL flush before the answer (docs/performance/round-06.md, "The write's tail"). A push that
        // fails leaves it to the login's next sync after `Presence.interval`.
        let digest = context.bearerToken.map(Tokens.digest)
        let also = service.presence.due(context, digest: digest) ? [Presence.statement] : []
        // The device's row, when this worker has not written it within the minute or the
        // app version is new (DevicePushes); remembered once the push has committed.
        let pushed = Date()
        let device = digest.map { DevicePushes.Key(digest: $0, clientID: clientID) }
        let deviceRow = device.map { service.devicePushes.due($0, appVersion: appVersion, now: pushed) } ?? true
        // New documents only (a device back from sea): one round trip, unless it turns out
        // to be a retry or to touch a partition the caller may not write (nil: nothing was
        // written, and the push goes the usual way).
        func firstPush() throws -> [JSON]? {
            do {
                return try context.asAPICaller { tx, caller in
                    try WritePath.applyFirstPush(inputs, clientID: clientID, device: appVersion, deviceRow: deviceRow, caller: caller,
                                                 in: tx, limits: writeLimits, also: also)
                }
            } catch is WritePath.NeedsReads {
                return nil
            }
        }
        let results = try (WritePath.needsNoReads(inputs) ? firstPush() : nil) ?? context.asAPICaller { tx, caller in
            // The writes and the COMMIT in one round trip: nothing follows them.
            try WritePath.apply(inputs, clientID: clientID, device: appVersion, deviceRow: deviceRow, caller: caller, in: tx,
                                limits: writeLimits, commit: true, also: also)
        }
        if deviceRow, let device { service.devicePushes.wrote(device, appVersion: appVersion, at: pushed) }
        // One counter per outcome rather than per change: making a Counter looks it up in
        // the metrics factory under a lock.
        var outcomes: [Outcome: Int] = [:]
        for result in results {
            outcomes[Outcome(status: result["status"]?.stringValue ?? "unknown", code: result["error"]?["code"]?.stringValue ?? ""),
                     default: 0] += 1
        }
        for (outcome, count) in outcomes {
            (outcome == .applied ? Self.appliedChanges : Self.counter(outcome)).increment(by: count)
        }
        return .json(["results": .array(results)], headers: [("Cache-Control", "no-store")])
    }

    private struct Outcome: Hashable {
        let status: String
        let code: String

        static let applied = Outcome(status: "applied", code: "")
    }

    private static func counter(_ outcome: Outcome) -> Counter {
        Counter(label: "tideway_push_changes_total", dimensions: [("outcome", outcome.status), ("code", outcome.code)])
    }

    /// The usual outcome's series, made once: making one looks it up in the metrics factory
    /// (2.5% of the worker's CPU per lone push, docs/performance/round-08.md).
    private static let appliedChanges = counter(.applied)
}
