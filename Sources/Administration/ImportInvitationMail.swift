import Mail

/// `tideway import` (Sources/TidewayImport) mails the invitation of each imported user when
/// a relay is configured: the same text as the back office's invitation.
package enum ImportInvitationMail {
    /// nil when the address cannot go into a mail header.
    package static func message(link: String, email: String, name: String, settings: MailSettings, site: String) -> MailMessage? {
        AccountMail.message(.invite, link: link, email: email, name: name, settings: settings, site: site)
    }
}
