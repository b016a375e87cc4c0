import Foundation
import Support
import TidewayJSON

/// One JSON line per request on standard error, written by `App.handle` once the answer is
/// made, a streamed one's once its body has run (the supervisor or journald keeps it):
///
///     {"time":"2026-11-25T06:40:00.123Z","level":"info","msg":"request","requestId":"5f0c…",
///      "method":"POST","route":"/api/v1/sync/push","status":200,"durationMs":4.2,
///      "userId":"0b6e…","clientId":"phone-1"}
///
/// `requestId` is nginx's `$request_id` (also the response's `X-Request-Id` and an error
/// body's `requestId`); `route` is the matched pattern, never the path with its values nor
/// the query; `userId`, `clientId` and `device` only when known. Never a token, a password, a
/// header or a document. `durationMs` runs until the answer's head is ready (a streamed body,
/// e.g. an export, takes longer).
public enum RequestLog {
    /// The line's bytes, its newline included.
    public static func line(_ context: RequestContext, status: Int, milliseconds: Double, time: Date = Date()) -> [UInt8] {
        var fields: [(String, JSON)] = [
            ("time", .string(UTCTimestamp.millisecondString(time))),
            ("level", .string(status >= 500 ? "error" : "info")),
            ("msg", "request"),
            ("requestId", .string(context.requestID)),
            ("method", .string(context.request.method)),
            ("route", context.route.map(JSON.string) ?? .null),
            ("status", .int(Int64(status))),
            ("durationMs", .double((milliseconds * 1000).rounded() / 1000)),
        ]
        if let user = context.loggedUserID { fields.append(("userId", .string(user))) }
        if let client = context.loggedClientID { fields.append(("clientId", .string(client))) }
        if let device = context.loggedDevice { fields.append(("device", .string(device))) }
        // In this order, so that a person reading the log finds time and id first. One
        // buffer for the line (a text per key and value cost 3% of an idle poll's worker CPU).
        var writer = JSONWriter(capacity: 320)
        writer.raw("{")
        for (index, (key, value)) in fields.enumerated() {
            if index > 0 { writer.raw(",") }
            writer.write(.string(key))
            writer.raw(":")
            writer.write(value)
        }
        writer.raw("}\n")
        return writer.output
    }

    static func write(_ context: RequestContext, status: Int, seconds: Double) {
        Log.line(line(context, status: status, milliseconds: seconds * 1000))
    }
}
