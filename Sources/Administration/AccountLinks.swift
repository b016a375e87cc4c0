import Database
import FastCGI
import Foundation
import Support
import Web

/// One-time links that let a person set their password: invitations (new users) and
/// resets (started by an admin or by the forgotten-password form). The token goes to the
/// person once; the database keeps only its SHA-256, and the first use spends it.
enum AccountLinks {
    enum Purpose: String {
        case invite, reset
    }

    /// 72 hours, as the issue asks.
    static let lifetimeSeconds = 72 * 3600

    static func register(_ router: inout Router) {
        router.get("/invite/:token", showForm)
        router.post("/invite/:token", submit)
    }

    /// Issues a link for a user the caller manages (the database checks that) and answers its URL.
    static func issue(_ tx: Transaction, _ context: RequestContext, for userID: String, purpose: Purpose) throws -> String {
        let token = Crypto.newToken()
        _ = try tx.query("select app.issue_account_link(\(userID)::uuid, \(purpose.rawValue), \(Tokens.hash(token)), \(lifetimeSeconds))")
        return url(context, token: token)
    }

    static func url(_ context: RequestContext, token: String) -> String {
        Admin.siteURL(context) + "/invite/" + token
    }

    struct LinkView {
        let chrome: Pages.Chrome
        let link: String
        let userID: String
        let email: String
        let isInvite: Bool
        let mail: String
        let mailFailed: Bool
    }

    /// The link, and what became of its mail. Rendered after the transaction committed and
    /// the mail went (or failed): the admin sees the link either way.
    static func linkPage(_ context: RequestContext, caller: PageCaller, link: String, userID: String, email: String,
                         purpose: Purpose, mail: AccountMail.Outcome) -> HTTPResponse {
        Pages.html(context, "admin/link", LinkView(
            chrome: Pages.Chrome(title: purpose == .invite ? "Invitation" : "Password reset", caller: caller),
            link: link, userID: userID, email: email, isInvite: purpose == .invite, mail: mail.text, mailFailed: mail.failed))
    }

    struct FormView {
        let chrome: Pages.Chrome
        let csrf: String
        let email: String
        let isInvite: Bool
        let error: String?
    }

    static func token(_ context: RequestContext) -> String {
        String((context.params["token"] ?? "").prefix(100))
    }

    static func invalidLink(_ context: RequestContext) -> HTTPResponse {
        Pages.error(AppError.notFound("this link is not valid: it was used already, it expired, or it never existed; ask an administrator for a new one"),
                    context: context)
    }

    /// The password form, bound to a pre-session cookie like the sign-in form (no session yet).
    static func showForm(_ context: RequestContext) throws -> HTTPResponse {
        let token = token(context)
        let found = try context.anonymous(readOnly: true) { tx in
            try tx.query("select email, purpose from app.peek_account_link(\(Tokens.hash(token)))").first
        }
        guard let found else { return invalidLink(context) }
        return form(context, email: found["email"] ?? "", isInvite: found["purpose"] == "invite", error: nil, status: 200)
    }

    static func form(_ context: RequestContext, email: String, isInvite: Bool, error: String?, status: Int) -> HTTPResponse {
        let preSession = Crypto.newToken()
        return Pages.html(context, "admin/set_password", FormView(
            chrome: Pages.Chrome(title: isInvite ? "Welcome" : "Choose a new password", caller: nil),
            csrf: WebSession.loginCSRFToken(preSession: preSession, key: context.app.secrets.csrfKey),
            email: email, isInvite: isInvite, error: error), status: status,
            headers: [Cookies.set(WebSession.preSessionCookie, preSession, maxAge: 3600)])
    }

    /// Checks the pre-session CSRF token of a form posted before sign-in; answers the form.
    static func preSessionForm(_ context: RequestContext) throws -> [String: String] {
        let form = try WebSession.readForm(context, limit: 16 * 1024).last
        let preSession = Cookies.parse(context.request.headers["cookie"])[WebSession.preSessionCookie] ?? ""
        let expected = WebSession.loginCSRFToken(preSession: preSession, key: context.app.secrets.csrfKey)
        guard !preSession.isEmpty, let sent = form["_csrf"], Crypto.constantTimeEqual(Array(sent.utf8), Array(expected.utf8)) else {
            throw AppError(.forbidden, "the form expired or did not come from this site; reload the page and try again")
        }
        return form
    }

    static func submit(_ context: RequestContext) throws -> HTTPResponse {
        let token = token(context)
        let form = try preSessionForm(context)
        let password = form["password"] ?? ""
        if let problem = PasswordRules.problem(password, confirmation: form["confirm"] ?? "") {
            let found = try context.anonymous(readOnly: true) { tx in
                try tx.query("select email, purpose from app.peek_account_link(\(Tokens.hash(token)))").first
            }
            guard let found else { return invalidLink(context) }
            return Self.form(context, email: found["email"] ?? "", isInvite: found["purpose"] == "invite", error: problem, status: 422)
        }
        let hash = Crypto.hashPassword(password)
        let userID = try context.anonymous { tx in
            try tx.query("select app.use_account_link(\(Tokens.hash(token)), \(hash)) as id").first?["id"]
        }
        guard userID != nil else { return invalidLink(context) }
        return Pages.redirect("/login?set=1", headers: [Cookies.clear(WebSession.preSessionCookie)])
    }
}

/// What a new password must be: long enough to resist guessing, short enough to hash.
enum PasswordRules {
    static func problem(_ password: String, confirmation: String) -> String? {
        if password.count < 10 { return "the password needs at least 10 characters" }
        if password.utf8.count > 500 { return "the password is too long" }
        if password != confirmation { return "the two passwords differ" }
        return nil
    }
}

