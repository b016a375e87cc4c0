import Database
import FastCGI
import Foundation
import Sync
import TidewayJSON
import Web

/// What every back-office admin page shares: the role gate, the audit record written in
/// the action's own transaction, and back-office document writes through the write path.
enum Admin {
    /// Officers get 403 before anything is read or written. The database's policies decide
    /// everything finer (which users, which agency); this gate only keeps officers out.
    static func requireAdmin(_ caller: PageCaller) throws {
        guard caller.info.isAdmin else { throw AppError.forbidden("only administrators may use this page") }
    }

    static func requireGlobalAdmin(_ caller: PageCaller) throws {
        guard caller.info.isGlobalAdmin else { throw AppError.forbidden("only global administrators may do this") }
    }

    /// An agency admin works on their own agency only; a global admin on any.
    static func requireAgencyRights(_ caller: PageCaller, agency key: String) throws {
        try requireAdmin(caller)
        guard caller.info.isGlobalAdmin || caller.info.agency == key else {
            throw AppError.forbidden("you manage another agency")
        }
    }

    /// Records an admin action; call it inside the action's transaction so that both commit
    /// or neither does. `from where` is the client address nginx saw.
    static func audit(_ tx: Transaction, _ context: RequestContext, _ caller: PageCaller,
                      action: String, target: String, detail: JSON = [:]) throws {
        _ = try tx.query("""
            insert into app.audit_log (actor, actor_email, action, target, detail, address)
            values (app.uid(), \(caller.info.email), \(action), \(target), \(detail.serialized())::jsonb, \(context.request.remoteAddress))
            """)
    }

    /// One document change built by a form, applied through the write path (so schemas,
    /// rules, policies and the partition clock apply and devices get it on their next pull).
    /// A refusal becomes the matching AppError.
    static func write(_ change: Change, caller: PageCaller, in tx: Transaction, context: RequestContext) throws {
        let results = try WritePath.apply(
            [.success(change)], clientID: nil, caller: caller.info, in: tx,
            limits: .init(documentBytes: context.app.config.limits.documentBytes))
        guard let result = results.first else { throw AppError(.internal, "no result from the write path") }
        if result["status"]?.stringValue == "applied" { return }
        let code = result["error"]?["code"]?.stringValue.flatMap(AppError.Code.init(rawValue:)) ?? .invalid
        throw AppError(code, result["error"]?["message"]?.stringValue ?? "the change was refused")
    }

    /// A fresh lower-case uuid for new documents.
    static func newDocumentID() -> String { UUID().uuidString.lowercased() }

    /// Path segments arrive percent-encoded (agency keys hold spaces and accents).
    static func pathParameter(_ context: RequestContext, _ name: String) -> String {
        FormData.decode(Substring(context.params[name] ?? ""))
    }

    /// The site's configured address, for one-time links (never the request's Host
    /// header, which the sender controls).
    static func siteURL(_ context: RequestContext) -> String {
        var url = context.app.config.publicURL
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }
}

