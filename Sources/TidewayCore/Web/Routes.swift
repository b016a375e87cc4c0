/// Every route of the product, by capability.
public enum Routes {
    public static func all(_ router: inout Router) {
        HealthRoutes.register(&router)
        AuthRoutes.register(&router)
        MeRoute.register(&router)
        SyncRoutes.register(&router)
        RegisterRoute.register(&router)
        EventRoutes.register(&router)
        BlobRoutes.register(&router)
        LoginPages.register(&router)
        HomePage.register(&router)
        BoardingRoutes.register(&router)
        AdminRoutes.register(&router)
        DashboardPages.register(&router)
    }
}
