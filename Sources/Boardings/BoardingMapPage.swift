import Dashboards
import Database
import Drawing
import FastCGI
import Sync
import Web

/// `/boardings/map`: the boardings list's map layer — the reports that the list's current
/// search and filters match, on the dashboards' map (points linking to their reports, or
/// bins when there are many), with the agency's protected areas when one agency is shown.
/// Same parameters as `/boardings`, same row-level security.
enum BoardingMapPage {
    struct View {
        let chrome: Pages.Chrome
        let livePartitions: String
        let activeFilters: [BoardingListPage.ActiveFilter]
        let hasActiveFilters: Bool
        let clearHref: String
        let listHref: String
        let totalLabel: String
        let unlocatedLabel: String?
        let problems: [String]
        /// Why no boarding is drawn (the map may still show the agency's protected areas).
        let nothingDrawn: String?
        let map: DashboardPages.Chart
    }

    static func show(_ context: RequestContext) throws -> HTTPResponse {
        try WebSession.asUser(context, readOnly: true) { tx, caller in
            let isGlobal = caller.info.isGlobalAdmin
            let filter = BoardingFilter(query: context.query, allowAgency: isGlobal)
            let own = BoardingAccess.ownPartition(caller.info)
            let matching = filter.conditions(ownPartition: own)
            let located = matching + " and r.lon between -180 and 180 and r.lat between -90 and 90"
            // Protected areas belong to an agency: drawn when the map shows one agency's reports.
            let agencyPartition = own ?? (filter.agency.isEmpty ? nil : Partition.agency(filter.agency))
            let (bounds, points, areas, count) = try tx.run(
                Statement(MapLayer.boundsQuery(located)) { $0.first },
                Statement.rows(MapLayer.pointsQuery(located)),
                Statement.rows(MapArea.protectedAreasQuery(partition: agencyPartition.map { "m.partition = \($0)" } ?? "false")),
                Statement.value("select count(*) as n from sync.reports r where " + matching, "n", as: Int.self))
            let layer = try MapLayer.fit(bounds: bounds, points: points, areas: MapArea.protectedAreas(areas), located: located, tx)
            let total = count ?? 0
            let unlocated = total - layer.count
            let active = BoardingListPage.activeFilters(filter, path: "/boardings/map")
            let emptyText = total == 0
                ? "No reports match this search and these filters."
                : "None of the matching reports has a position."
            return Pages.html(context, "boardings/map", View(
                chrome: Pages.Chrome(title: "Boardings on a map", caller: caller),
                livePartitions: BoardingListPage.liveAgencies(isGlobal: isGlobal, filter: filter, caller: caller.info),
                activeFilters: active, hasActiveFilters: !active.isEmpty, clearHref: "/boardings/map",
                listHref: filter.url(), totalLabel: total == 1 ? "1 report matches" : "\(total.formatted(.number)) reports match",
                unlocatedLabel: unlocated > 0 ? "\(unlocated.formatted(.number)) without a position \(unlocated == 1 ? "is" : "are") not drawn" : nil,
                problems: filter.problems, nothingDrawn: layer.count == 0 ? emptyText : nil,
                map: layer.chart(title: "Boardings matching the current filter", home: context.app.config.home, emptyText: emptyText)))
        }
    }
}
