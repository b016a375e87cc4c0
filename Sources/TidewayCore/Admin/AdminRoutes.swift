/// The back office's administration pages (issue 7), registered together.
enum AdminRoutes {
    static func register(_ router: inout Router) {
        UserPages.register(&router)
        AccountLinks.register(&router)
        AccountPages.register(&router)
        AgencyPages.register(&router)
        AuditPage.register(&router)
        SyncInspector.register(&router)
    }
}
