import Database
import FastCGI
import Support

/// The browser side of signing in: a session cookie (an opaque token of kind `session`)
/// and CSRF tokens derived from it, checked on every state-changing form.
public enum WebSession {
    package static let cookieName = "tw_session"
    /// Before sign-in there is no session: the login form's token is bound to this cookie.
    package static let preSessionCookie = "tw_presession"

    package static func sessionToken(_ context: RequestContext) -> String? {
        Cookies.parse(context.request.headers["cookie"])[cookieName]
    }

    /// The CSRF token for a session: an HMAC of the session token's hash, so it cannot be
    /// forged without the server's key and needs no storage.
    static func csrfToken(session: String, key: [UInt8]) -> String {
        Crypto.base64url(Crypto.hmacSHA256(key: key, Array("csrf:".utf8) + Crypto.sha256(session)))
    }

    package static func loginCSRFToken(preSession: String, key: [UInt8]) -> String {
        Crypto.base64url(Crypto.hmacSHA256(key: key, Array("login:".utf8) + Array(preSession.utf8)))
    }

    /// The signed-in browser user's transaction; 401 (shown as a redirect to /login) without one.
    public static func asUser<T>(
        _ context: RequestContext, readOnly: Bool = false, _ body: (Transaction, PageCaller) throws -> T
    ) throws -> T {
        guard let token = sessionToken(context) else { throw AppError.unauthenticated }
        return try context.asCaller(token: token, kind: .session, readOnly: readOnly) { tx, caller in
            try body(tx, PageCaller(info: caller, csrf: csrfToken(session: token, key: context.app.secrets.csrfKey)))
        }
    }

    /// Parses a posted form and checks its CSRF token against the session's.
    public static func postedForm(_ context: RequestContext, limit: Int = 1 << 20) throws -> [String: String] {
        let form = try readForm(context, limit: limit)
        guard let token = sessionToken(context), let sent = form.last["_csrf"],
              Crypto.constantTimeEqual(Array(sent.utf8), Array(csrfToken(session: token, key: context.app.secrets.csrfKey).utf8))
        else { throw AppError(.forbidden, "the form expired or did not come from this site; reload the page and try again") }
        return form.last
    }

    package static func readForm(_ context: RequestContext, limit: Int) throws -> FormData.Parsed {
        guard context.request.mediaType == "application/x-www-form-urlencoded" else {
            throw AppError(.unsupportedMediaType, "expected a form")
        }
        let bytes = try context.request.body.readAll(limit: limit)
        return FormData.parse(String(decoding: bytes, as: UTF8.self))
    }
}

/// The signed-in user as pages see them, with the CSRF token their forms carry.
public struct PageCaller: Sendable {
    public let info: CallerInfo
    public let csrf: String
}
