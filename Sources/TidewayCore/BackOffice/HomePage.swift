import FastCGI

/// `/`: the signed-in home page. Dashboards replace its body later; for now it says who
/// you are and where to go.
enum HomePage {
    static func register(_ router: inout Router) {
        router.get("/", show)
    }

    struct HomeView {
        let chrome: Pages.Chrome
        let displayName: String
        let roleLabel: String
        let agency: String?
        /// The agency's partition: the page offers a refresh when it changes. (Stored, not
        /// computed: templates see stored properties only.)
        let livePartition: String?
    }

    static func show(_ context: RequestContext) throws -> HTTPResponse {
        try WebSession.asUser(context, readOnly: true) { _, caller in
            Pages.html(context, "home", HomeView(
                chrome: Pages.Chrome(title: "Home", caller: caller),
                displayName: caller.info.displayName.isEmpty ? caller.info.email : caller.info.displayName,
                roleLabel: caller.info.role.label, agency: caller.info.agency,
                livePartition: caller.info.agency.map(Partition.agency)))
        }
    }
}
