import Database
import FastCGI
import Mail
import Support
import Web

/// `/account` (one's own profile and password) and `/forgot` (a reset link by email,
/// whose answer is the same whether or not the address exists).
enum AccountPages {
    static func register(_ router: inout Router, mailer: Mailer?) {
        router.get("/account", show)
        router.post("/account", saveProfile)
        router.post("/account/password", changePassword)
        router.get("/forgot") { forgotPage($0, mailer: mailer, sent: false) }
        router.post("/forgot") { try submitForgot($0, mailer: mailer) }
    }

    struct AccountView {
        let chrome: Pages.Chrome
        let csrf: String
        let email: String
        let firstName: String
        let lastName: String
        let displayName: String
        let roleLabel: String
        let agency: String
        let notice: String?
        let error: String?
    }

    static func show(_ context: RequestContext) throws -> HTTPResponse {
        let notice: String? = switch context.query["done"] {
        case "profile": "Profile saved."
        case "password": "Password changed. Your other sessions and devices were signed out."
        default: nil
        }
        return try page(context, notice: notice, error: nil, status: 200)
    }

    static func page(_ context: RequestContext, notice: String?, error: String?, status: Int) throws -> HTTPResponse {
        try WebSession.asUser(context, readOnly: true) { tx, caller in
            guard let row = try tx.query("""
                select email, first_name, last_name, display_name, role, coalesce(agency, '') as agency from app.users where id = app.uid()
                """).first else { throw AppError.unauthenticated }
            return Pages.html(context, "admin/account", AccountView(
                chrome: Pages.Chrome(title: "Your account", caller: caller), csrf: caller.csrf,
                email: row["email"] ?? "", firstName: row["first_name"] ?? "", lastName: row["last_name"] ?? "",
                displayName: row["display_name"] ?? "", roleLabel: caller.info.role.label, agency: row["agency"] ?? "",
                notice: notice, error: error), status: status)
        }
    }

    static func saveProfile(_ context: RequestContext) throws -> HTTPResponse {
        let form = try WebSession.postedForm(context, limit: 16 * 1024)
        let first = String((form["firstName"] ?? "").prefix(100))
        let last = String((form["lastName"] ?? "").prefix(100))
        let display = String((form["displayName"] ?? "").prefix(100))
        try WebSession.asUser(context) { tx, _ in
            _ = try tx.query("""
                update app.users set first_name = \(first), last_name = \(last), display_name = \(display) where id = app.uid()
                """)
        }
        return Pages.redirect("/account?done=profile")
    }

    /// Needs the current password; ends the user's other logins (not this browser's).
    static func changePassword(_ context: RequestContext) throws -> HTTPResponse {
        let form = try WebSession.postedForm(context, limit: 16 * 1024)
        let new = form["password"] ?? ""
        if let problem = PasswordRules.problem(new, confirmation: form["confirm"] ?? "") {
            return try page(context, notice: nil, error: problem, status: 422)
        }
        let wrong = try WebSession.asUser(context) { tx, caller -> Bool in
            let stored = try tx.query("select app.own_password_hash() as hash").first?["hash"]
            guard let stored, Crypto.verifyPassword(form["current"] ?? "", hash: stored) else { return true }
            _ = try tx.query("select app.change_own_password(\(Crypto.hashPassword(new)))")
            try Admin.audit(tx, context, caller, action: "account.password_changed", target: "user:\(caller.info.userID)")
            return false
        }
        if wrong { return try page(context, notice: nil, error: "the current password is not right", status: 422) }
        return Pages.redirect("/account?done=password")
    }

    struct ForgotView {
        let chrome: Pages.Chrome
        let csrf: String
        let sent: Bool
        let mailConfigured: Bool
        let error: String?
    }

    static func forgotPage(_ context: RequestContext, mailer: Mailer?, sent: Bool, error: String? = nil, status: Int = 200,
                           headers: [(String, String)] = []) -> HTTPResponse {
        let preSession = Crypto.newToken()
        return Pages.html(context, "admin/forgot", ForgotView(
            chrome: Pages.Chrome(title: "Forgotten password", caller: nil),
            csrf: WebSession.loginCSRFToken(preSession: preSession, key: context.app.secrets.csrfKey), sent: sent,
            mailConfigured: mailer != nil, error: error),
            status: status, headers: headers + [Cookies.set(WebSession.preSessionCookie, preSession, maxAge: 3600)])
    }

    /// The same answer for every address, and as fast: the mail leaves from a background
    /// queue after the commit. Every request counts against its email and its client
    /// address, known or not, so the limit reveals nothing either. Without a relay the
    /// link goes to the worker's log for the operator to hand over.
    static func submitForgot(_ context: RequestContext, mailer: Mailer?) throws -> HTTPResponse {
        let form = try AccountLinks.preSessionForm(context)
        let email = String((form["email"] ?? "").trimmingCharacters(in: .whitespaces).prefix(254))
        guard !email.isEmpty else { return forgotPage(context, mailer: mailer, sent: true) }
        let limits = context.app.config.limits
        let keys = ["forgot-email:" + email.lowercased(), "forgot-address:" + context.request.remoteAddress]
        let token = Crypto.newToken()
        let outcome = try context.anonymous { tx -> (retry: Int, found: Row?) in
            let retry = try tx.query("""
                select app.login_retry_after(\(keys[0]), \(keys[1]), \(limits.forgotPerEmail), \(limits.forgotPerAddress), \(limits.forgotWindowSeconds)) as retry
                """).first?.int("retry") ?? 0
            if retry > 0 { return (retry, nil) }
            let (_, found) = try tx.run(
                Statement.effect("select app.note_login_failure(\(keys)::text[])"),
                Statement(
                    "select user_id, email, name from app.issue_reset_for_mail(\(email), \(Tokens.hash(token)), \(AccountLinks.lifetimeSeconds))"
                ) { $0.first })
            return (0, found)
        }
        if outcome.retry > 0 {
            let minutes = (outcome.retry + 59) / 60
            return forgotPage(context, mailer: mailer, sent: false, error: "Too many requests for a link; try again in \(minutes) minute\(minutes == 1 ? "" : "s").",
                              status: 429, headers: [("Retry-After", String(outcome.retry))])
        }
        if let found = outcome.found, let userID = found["user_id"] {
            let link = AccountLinks.url(context, token: token)
            if let mailer {
                if let message = AccountMail.message(.resetByRequest, link: link, email: found["email"] ?? "", name: found["name"] ?? "",
                                                     settings: mailer.settings, site: Admin.siteURL(context)) {
                    mailer.sendLater(message, what: "reset link for user \(userID)", requestID: context.requestID)
                } else {
                    Log.warning("reset link for user \(userID) not mailed: the address cannot be used in a mail", requestID: context.requestID)
                }
            } else {
                Log.info("MAIL NOT CONFIGURED: password reset requested for user \(userID); hand this link to them: \(link)",
                         requestID: context.requestID)
            }
        }
        return forgotPage(context, mailer: mailer, sent: true)
    }
}
