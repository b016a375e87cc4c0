import Mail
import Web

/// The back office's administration pages (issue 7), registered together.
public enum AdminRoutes {
    /// `mailer`: nil when no SMTP relay is configured (links are then shown and logged).
    public static func register(_ router: inout Router, mailer: Mailer?) {
        UserPages.register(&router, mailer: mailer)
        AccountLinks.register(&router)
        AccountPages.register(&router, mailer: mailer)
        AgencyPages.register(&router)
        AuditPage.register(&router)
        SyncInspector.register(&router)
    }
}
