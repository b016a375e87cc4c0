import FastCGI
import Foundation
import Sync
import Web

/// `GET /api/v1/sync/events?partition=…&partition=…`: authorizes a subscription, then hands
/// the connection to nginx's nchan (`X-Accel-Redirect`), which holds it without a worker
/// thread. The stream listens on each partition's channel, on the login's own channel (first,
/// so that nchan's hooks name the login) and on one of its own (EventChannels.stream). A reconnect's `Last-Event-ID` is checked here
/// (EventID) and passed on in the redirect's query (`?after=`): nchan reads no client text.
package enum EventRoutes {
    static let maxPartitions = 50

    package static func register(_ router: inout Router) {
        router.get("/api/v1/sync/events", subscribe)
        // Internal locations of nginx only (clients cannot reach them): stream start and end.
        router.get("/_events_hook/subscribe", { try streamChanged($0, delta: 1) })
        router.get("/_events_hook/unsubscribe", { try streamChanged($0, delta: -1) })
    }

    static func subscribe(_ context: RequestContext) throws -> HTTPResponse {
        let names = context.queryValues["partition"] ?? []
        guard !names.isEmpty, names.count <= maxPartitions else {
            throw AppError.badRequest("name 1 to \(maxPartitions) partitions: ?partition=agency%3DGabon&partition=…")
        }
        for name in names where Partition(name) == nil {
            throw AppError.badRequest("not a partition: \(name)")
        }
        // nchan takes a position from these before any Last-Event-ID, with its own parse, and nginx
        // cannot take them off the request: not translated either (docs/sync-protocol.md, "Change events").
        let headers = context.request.headers
        guard headers["if-none-match"] == nil, headers["if-modified-since"] == nil else {
            throw AppError.badRequest("an event stream resumes from Last-Event-ID only, not If-None-Match or If-Modified-Since")
        }
        let partitions = Set(names).sorted()
        // Phones send their Bearer token; the back office's pages use the session cookie.
        let (token, kind): (String, TokenKind)
        if let bearer = context.bearerToken {
            (token, kind) = (bearer, .access)
        } else if let session = WebSession.sessionToken(context) {
            (token, kind) = (session, .session)
        } else {
            throw AppError.unauthenticated
        }
        let (refused, caller) = try context.asCaller(token: token, kind: kind, readOnly: true) { tx, caller in
            let rows = try tx.query("select p, app.can_read(p) as readable from unnest(\(names)::text[]) p", thenCommit: true)
            return (rows.rows.filter { $0.bool("readable") != true }.compactMap { $0["p"] }, caller)
        }
        guard refused.isEmpty else {
            throw AppError.forbidden("you may not read \(refused.sorted().joined(separator: ", "))")
        }
        // Every channel of the stream, in the order of its event ids' tags: the login's, the
        // partitions' and the stream's own (last, where nginx's template put it before round 19:
        // the ids of streams opened before still fit).
        let channels = [EventChannels.login(caller.loginID)] + partitions.map(EventChannels.partition)
            + [EventChannels.stream()]
        let after = try EventID.start(lastEventID: headers["last-event-id"], channels: channels.count,
                                      now: Int(Date().timeIntervalSince1970))
        return HTTPResponse(status: 200, headers: [
            ("X-Accel-Redirect", "/_events/" + channels.joined(separator: ",") + (after.map { "?after=" + $0.text } ?? "")),
            ("Cache-Control", "no-store"),
        ])
    }

    static func streamChanged(_ context: RequestContext, delta: Int) throws -> HTTPResponse {
        guard let channel = context.request.params["TIDEWAY_EVENT_CHANNEL"], !channel.isEmpty else {
            return HTTPResponse(status: 204)
        }
        try context.anonymous { tx in _ = try tx.query("select app.event_stream_changed(\(channel), \(delta))") }
        return HTTPResponse(status: 204)
    }
}
