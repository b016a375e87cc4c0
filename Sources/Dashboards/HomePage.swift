import FastCGI
import Sync
import Web

/// `/`: the signed-in home page: the role's dashboard (Dashboards/DashboardPages.swift);
/// a user with neither an agency nor the global role gets a plain welcome.
package enum HomePage {
    package static func register(_ router: inout Router) {
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
        try WebSession.asUser(context, readOnly: true) { tx, caller in
            if let dashboard = try DashboardPages.home(context, tx, caller) { return dashboard }
            return Pages.html(context, "home", HomeView(
                chrome: Pages.Chrome(title: "Home", caller: caller),
                displayName: caller.info.displayName.isEmpty ? caller.info.email : caller.info.displayName,
                roleLabel: caller.info.role.label, agency: caller.info.agency,
                livePartition: caller.info.agency.map(Partition.agency)))
        }
    }
}
