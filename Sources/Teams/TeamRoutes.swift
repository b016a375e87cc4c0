import Web

/// The teams capability (issue 17): grants over the API; the back office's `/teams` pages.
public enum TeamRoutes {
    public static func register(_ router: inout Router) {
        GrantRoutes.register(&router)
        TeamPages.register(&router)
    }
}
