import Foundation
import Mail
import Support
import Web

/// The mails that carry one-time links: an invitation, or a reset started by an admin or by
/// the person on `/forgot`. They are composed and sent by the worker after the link's
/// transaction has committed: the database keeps only the link's hash, and the log never
/// sees the link while mail is configured.
enum AccountMail {
    enum Kind {
        case invite, resetByAdmin, resetByRequest
    }

    /// What became of the mail, for the admin's link page.
    enum Outcome {
        case notConfigured
        case sent(to: String)
        case failed(to: String, reason: String)

        var text: String {
            switch self {
            case .notConfigured: "Mail is not configured on this server, so nothing was sent: hand the link over yourself."
            case .sent(let to): "Sent by mail to \(to)."
            case .failed(let to, let reason): "Sending the mail to \(to) failed (\(reason)). Hand the link over yourself, or try again later."
            }
        }

        var failed: Bool {
            if case .failed = self { return true }
            return false
        }
    }

    /// nil when the address cannot go into a mail header (the mail is not sent then).
    static func message(_ kind: Kind, link: String, email: String, name: String, settings: MailSettings, site: String) -> MailMessage? {
        guard let to = MailAddress(address: email, name: name) else { return nil }
        let greeting = to.name.isEmpty ? "Hello," : "Hello \(to.name),"
        let subject: String
        let lines: [String]
        switch kind {
        case .invite:
            subject = "Your Tideway account"
            lines = [
                "An administrator created a Tideway account for you (\(email)) at \(site).",
                "Open this link to choose your password. It works once, within 72 hours:",
            ]
        case .resetByAdmin, .resetByRequest:
            subject = "Choose a new Tideway password"
            lines = [
                kind == .resetByAdmin
                    ? "An administrator started a password reset for your Tideway account (\(email)) at \(site)."
                    : "Someone asked for a new password for your Tideway account (\(email)) at \(site).",
                "Open this link to choose one. It works once, within 72 hours, and signs out your other sessions:",
            ]
        }
        let ending = kind == .resetByRequest
            ? "If you did not ask for this, ignore this mail: your password stays as it is."
            : "If you did not expect this mail, you can ignore it."
        let body = ([greeting, ""] + lines + ["", link, "", ending, "", "-- ", "Tideway"]).joined(separator: "\n")
        return MailMessage(from: settings.from, to: to, subject: subject, body: body)
    }

    /// Sends at once and answers the outcome (admin-started links: the admin sees it).
    static func sendNow(_ context: RequestContext, _ mailer: Mailer?, _ kind: Kind, userID: String, link: String, email: String, name: String) -> Outcome {
        guard let mailer else { return .notConfigured }
        guard let message = message(kind, link: link, email: email, name: name, settings: mailer.settings, site: Admin.siteURL(context)) else {
            return .failed(to: email, reason: "the address cannot be used in a mail")
        }
        if let failure = mailer.send(message) {
            Log.warning("mail not sent, \(kind == .invite ? "invitation" : "reset") link for user \(userID): \(failure)", requestID: context.requestID)
            return .failed(to: email, reason: failure)
        }
        return .sent(to: email)
    }
}
