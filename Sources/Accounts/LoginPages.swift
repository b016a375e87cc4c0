import FastCGI
import Foundation
import Support
import Web

/// `/login` and `/logout` for browsers.
package enum LoginPages {
    package static func register(_ router: inout Router) {
        router.get("/login", showLogin)
        router.post("/login", submitLogin)
        router.get("/logout", showLogout)
        router.post("/logout", submitLogout)
    }

    struct LoginView {
        let chrome: Pages.Chrome
        let csrf: String
        let email: String
        let next: String
        let error: String?
    }

    static func showLogin(_ context: RequestContext) throws -> HTTPResponse {
        loginForm(context, email: "", error: nil, status: 200)
    }

    /// The form, with a fresh pre-session cookie and the CSRF token bound to it.
    static func loginForm(_ context: RequestContext, email: String, error: String?, status: Int,
                          headers: [(String, String)] = []) -> HTTPResponse {
        let preSession = Crypto.newToken()
        let view = LoginView(
            chrome: Pages.Chrome(title: "Sign in", caller: nil),
            csrf: WebSession.loginCSRFToken(preSession: preSession, key: context.app.secrets.csrfKey),
            email: email, next: safeNext(context.query["next"]), error: error)
        return Pages.html(context, "login", view, status: status,
                          headers: [Cookies.set(WebSession.preSessionCookie, preSession, maxAge: 3600)] + headers)
    }

    static func submitLogin(_ context: RequestContext) throws -> HTTPResponse {
        let form = try WebSession.readForm(context, limit: 16 * 1024).last
        let preSession = Cookies.parse(context.request.headers["cookie"])[WebSession.preSessionCookie] ?? ""
        let expected = WebSession.loginCSRFToken(preSession: preSession, key: context.app.secrets.csrfKey)
        guard !preSession.isEmpty, let sent = form["_csrf"], Crypto.constantTimeEqual(Array(sent.utf8), Array(expected.utf8)) else {
            throw AppError(.forbidden, "the sign-in form expired; reload the page and try again")
        }
        let email = (form["email"] ?? "").trimmingCharacters(in: .whitespaces)
        let session = Crypto.newToken()
        do {
            _ = try SignIn.signIn(
                context: context, email: email, password: form["password"] ?? "", kind: "web",
                device: String((context.request.headers["user-agent"] ?? "browser").prefix(200)),
                tokens: [(session, .session, context.app.config.sessionSeconds)])
        } catch let error as AppError where error.code == .unauthenticated || error.code == .rateLimited {
            var headers: [(String, String)] = []
            if let retry = error.retryAfter { headers.append(("Retry-After", String(retry))) }
            return loginForm(context, email: email, error: error.message, status: error.status, headers: headers)
        }
        return Pages.redirect(safeNext(form["next"]), headers: [
            Cookies.set(WebSession.cookieName, session, maxAge: context.app.config.sessionSeconds),
            Cookies.clear(WebSession.preSessionCookie),
        ])
    }

    struct LogoutView {
        let chrome: Pages.Chrome
    }

    /// Signing out is a POST (a link elsewhere must not sign anyone out); GET shows the button.
    static func showLogout(_ context: RequestContext) throws -> HTTPResponse {
        try WebSession.asUser(context, readOnly: true) { _, caller in
            Pages.html(context, "logout", LogoutView(chrome: Pages.Chrome(title: "Sign out", caller: caller)))
        }
    }

    static func submitLogout(_ context: RequestContext) throws -> HTTPResponse {
        _ = try WebSession.postedForm(context)
        try WebSession.asUser(context) { tx, _ in _ = try tx.query("select app.close_login()") }
        return Pages.redirect("/login", headers: [Cookies.clear(WebSession.cookieName)])
    }

    /// Only a local path: `next` must not send people to another site. No control
    /// character (a tab is dropped by browsers, so `/\t/evil.example` reads as
    /// `//evil.example`; CR LF would inject headers), no space, no backslash.
    static func safeNext(_ next: String?) -> String {
        guard let next, next.hasPrefix("/"), !next.hasPrefix("//"),
              !next.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F || $0 == "\\" })
        else { return "/" }
        return next
    }
}

