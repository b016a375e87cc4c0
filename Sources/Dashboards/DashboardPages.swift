import Database
import Drawing
import FastCGI
import Foundation
import Sync
import Web

/// The dashboards (issue 8): the home page `/` shows the signed-in user's role's dashboard
/// (officer, agency admin, global admin); `/agencies/<key>/dashboard` shows one agency's
/// to anyone who may read that agency. Every number is read inside the user's own
/// transaction (row-level security), charts are SVG drawn here, each with a table of its
/// numbers, so the pages work without JavaScript and print.
package enum DashboardPages {
    package static func register(_ router: inout Router) {
        router.get("/agencies/:key/dashboard", agency)
    }

    /// `/`: the role's dashboard (a user without an agency and not a global admin sees a
    /// plain welcome).
    static func home(_ context: RequestContext, _ tx: Transaction, _ caller: PageCaller) throws -> HTTPResponse? {
        let range = try DateRange.from(query: context.query)
        if caller.info.isGlobalAdmin { return try global(context, tx, caller, range) }
        guard let agency = caller.info.agency else { return nil }
        if caller.info.role == .officer { return try officer(context, tx, caller, agency, range) }
        let name = try tx.query("select name from app.agencies where key = \(agency)").first?["name"] ?? agency
        return try agencyPage(context, tx, caller, key: agency, name: name, range: range, action: "/")
    }

    static func agency(_ context: RequestContext) throws -> HTTPResponse {
        let key = context.params["key"].map { $0.removingPercentEncoding ?? $0 } ?? ""
        return try WebSession.asUser(context, readOnly: true) { tx, caller in
            let range = try DateRange.from(query: context.query)
            guard let row = try tx.query("""
                select name, app.can_read('agency=' || key) as readable from app.agencies where key = \(key)
                """).first
            else { throw AppError(.notFound, "there is no agency \(key)") }
            guard row.bool("readable") == true else { throw AppError(.forbidden, "you may not see the agency \(key)") }
            return try agencyPage(context, tx, caller, key: key, name: row["name"] ?? key, range: range,
                                  action: agencyPath(key))
        }
    }

    static func agencyPath(_ key: String) -> String {
        "/agencies/" + (key.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/?#"))) ?? key) + "/dashboard"
    }

    // MARK: views

    struct Tile { let label: String; let value: String; let unit: String }
    typealias TableRow = Figure.Row
    /// A chart and the table of its numbers.
    package typealias Chart = Figure
    struct Picker { let from: String; let to: String; let action: String }

    struct OfficerView {
        let chrome: Pages.Chrome
        let heading: String
        let picker: Picker
        let livePartition: String
        let tiles: [Tile]
        let recent: [RecentRow]
        let hasRecent: Bool
        let map: Chart
    }
    struct RecentRow { let href: String; let id: String; let at: String; let vessel: String; let warnings: Int; let citations: Int; let level: String }

    struct AgencyView {
        let chrome: Pages.Chrome
        let heading: String
        let agencyKey: String
        let boardingsHref: String
        let picker: Picker
        let livePartition: String
        let tiles: [Tile]
        let charts: [Chart]
        let officers: [OfficerRow]
        let hasOfficers: Bool
        let map: Chart
    }
    struct OfficerRow { let email: String; let boardings: Int; let violations: Int; let compliance: String; let hours: String }

    struct GlobalView {
        let chrome: Pages.Chrome
        let picker: Picker
        /// Kept by the date-range form, so that changing dates keeps the order.
        let sortKey: String
        let sortLinks: [SortLink]
        let agencies: [AgencyRow]
        let livePartition: String
    }
    struct SortLink { let label: String; let href: String; let current: Bool }
    struct AgencyRow {
        let key: String; let name: String; let dashboardHref: String; let boardingsHref: String
        let boardings: Int; let violations: Int; let warnings: Int; let citations: Int; let compliance: String
    }

    // MARK: pages

    static func officer(_ context: RequestContext, _ tx: Transaction, _ caller: PageCaller, _ agency: String,
                        _ range: DateRange) throws -> HTTPResponse {
        let scope = DashboardScope(agency: agency, officerEmail: caller.info.email, range: range)
        let data = try DashboardData.read(tx, scope, agencyCharts: false)
        let t = data.totals
        let tiles = [
            Tile(label: "Days on patrol", value: String(t.days), unit: "days"),
            Tile(label: "Hours on patrol", value: hours(t.hours), unit: "hours"),
            Tile(label: "Boardings", value: String(t.boardings), unit: ""),
            Tile(label: "Warnings", value: String(t.warnings), unit: ""),
            Tile(label: "Citations", value: String(t.citations), unit: ""),
            Tile(label: "Compliance rate", value: rate(t.compliant, t.boardings), unit: ""),
        ]
        let recent = data.recent.map {
            RecentRow(href: "/boardings/" + ($0.id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0.id), id: $0.id,
                      at: $0.at, vessel: $0.vessel, warnings: $0.warnings, citations: $0.citations, level: $0.level)
        }
        let name = caller.info.displayName.isEmpty ? caller.info.email : caller.info.displayName
        return Pages.html(context, "dashboards/officer", OfficerView(
            chrome: Pages.Chrome(title: "My patrol", caller: caller), heading: "Welcome, \(name)",
            picker: Picker(from: range.from, to: range.to, action: "/"), livePartition: Partition.agency(agency),
            tiles: tiles, recent: recent, hasRecent: !recent.isEmpty, map: data.map.chart(title: "My boardings", home: context.app.config.home)))
    }

    static func agencyPage(_ context: RequestContext, _ tx: Transaction, _ caller: PageCaller, key: String, name: String,
                           range: DateRange, action: String) throws -> HTTPResponse {
        let data = try DashboardData.read(tx, DashboardScope(agency: key, officerEmail: nil, range: range), agencyCharts: true)
        let t = data.totals
        let tiles = [
            Tile(label: "Boardings", value: String(t.boardings), unit: ""),
            Tile(label: "Violations", value: String(t.warnings + t.citations), unit: ""),
            Tile(label: "Warnings", value: String(t.warnings), unit: ""),
            Tile(label: "Citations", value: String(t.citations), unit: ""),
            Tile(label: "Compliance rate", value: rate(t.compliant, t.boardings), unit: ""),
            Tile(label: "Hours on patrol", value: hours(t.hours), unit: "hours"),
        ]
        let monthLabels = data.months.map(\.label)
        let monthRates: [Double?] = data.months.map { $0.boardings > 0 ? 100 * Double($0.compliant) / Double($0.boardings) : nil }
        let charts = [
            Chart(id: "weekly", heading: "Boardings per week",
                  svg: SVG.bars(title: "Boardings per week, \(range.from) to \(range.to)", values: data.weeks,
                                unit: "boardings", categoryAxis: "week starting (Monday, UTC)"),
                  columns: ["Week starting", "Boardings"],
                  rows: data.weeks.map { TableRow(cells: [$0.label, SVG.number($0.value)]) }, empty: t.boardings == 0),
            Chart(id: "compliance", heading: "Compliance rate per month",
                  svg: SVG.line(title: "Compliance rate per month", labels: monthLabels, values: monthRates,
                                unit: "% compliant", categoryAxis: "month (UTC)", maxValue: 100, color: SVG.palette[2]),
                  columns: ["Month", "Boardings", "Compliant", "Compliance rate"],
                  rows: data.months.map { TableRow(cells: [$0.label, String($0.boardings), String($0.compliant), rate($0.compliant, $0.boardings)]) },
                  empty: t.boardings == 0),
            Chart(id: "codes", heading: "Violations by code (top 10)",
                  svg: SVG.horizontalBars(title: "Violations by code, top 10", values: data.codes, unit: "violations", color: SVG.palette[5]),
                  columns: ["Code", "Violations"], rows: data.codes.map { TableRow(cells: [$0.label, SVG.number($0.value)]) },
                  empty: data.codes.isEmpty),
            Chart(id: "catch", heading: "Catch by species (top 10, weight)",
                  svg: SVG.horizontalBars(title: "Catch by species, kilograms", values: data.catchKg, unit: "kg", color: SVG.palette[4]),
                  columns: ["Species", "Weight (kg)"], rows: data.catchKg.map { TableRow(cells: [$0.label, String(format: "%.1f", $0.value)]) },
                  empty: data.catchKg.isEmpty),
            Chart(id: "safety", heading: "Safety levels",
                  svg: SVG.donut(title: "Boardings by safety level", values: data.safety,
                                 colors: data.safety.map { SVG.safetyColor($0.label) }, unit: "boardings"),
                  columns: ["Safety level", "Boardings"], rows: data.safety.map { TableRow(cells: [$0.label, SVG.number($0.value)]) },
                  empty: data.safety.isEmpty),
        ]
        let officers = data.officers.map {
            OfficerRow(email: $0.email, boardings: $0.boardings, violations: $0.violations,
                       compliance: rate($0.compliant, $0.boardings), hours: hours($0.hours))
        }
        return Pages.html(context, "dashboards/agency", AgencyView(
            chrome: Pages.Chrome(title: "\(name) dashboard", caller: caller), heading: name, agencyKey: key,
            boardingsHref: "/boardings?agency=" + FormData.encode(key),
            picker: Picker(from: range.from, to: range.to, action: action), livePartition: Partition.agency(key),
            tiles: tiles, charts: charts, officers: officers, hasOfficers: !officers.isEmpty,
            map: data.map.chart(title: "Boardings of \(name)", home: context.app.config.home)))
    }

    /// Sort orders of the global table: the query's `sort` names one (whitelisted).
    static let sorts: [(key: String, label: String, order: String)] = [
        ("name", "Agency", "a.name, a.key"),
        ("boardings", "Boardings", "boardings desc, a.name"),
        ("violations", "Violations", "violations desc, a.name"),
        ("warnings", "Warnings", "warnings desc, a.name"),
        ("citations", "Citations", "citations desc, a.name"),
        ("compliance", "Compliance rate",
         "sum(d.compliant)::float8 / nullif(sum(d.boardings), 0) desc nulls last, a.name"),
    ]

    static func global(_ context: RequestContext, _ tx: Transaction, _ caller: PageCaller, _ range: DateRange) throws -> HTTPResponse {
        let sortKey = context.query["sort"] ?? "name"
        guard let sort = sorts.first(where: { $0.key == sortKey }) else {
            throw AppError.badRequest("`sort` must be one of " + sorts.map(\.key).joined(separator: ", "))
        }
        let rows = try tx.query("""
            select a.key, a.name, coalesce(sum(d.boardings), 0) as boardings,
                   coalesce(sum(d.warnings + d.citations), 0) as violations,
                   coalesce(sum(d.warnings), 0) as warnings, coalesce(sum(d.citations), 0) as citations,
                   coalesce(sum(d.compliant), 0) as compliant
              from app.agencies a
              left join app.boarding_days d on d.partition = 'agency=' || a.key
                   and d.day between \(range.from)::date and \(range.to)::date
             group by a.key, a.name
             order by \(unsafeSQL: sort.order)
            """).rows
        let agencies = rows.map { row -> AgencyRow in
            let key = row["key"] ?? ""
            let n = row.int("boardings") ?? 0
            return AgencyRow(key: key, name: row["name"] ?? key, dashboardHref: agencyPath(key) + "?from=\(range.from)&to=\(range.to)",
                             boardingsHref: "/boardings?agency=" + FormData.encode(key), boardings: n,
                             violations: row.int("violations") ?? 0, warnings: row.int("warnings") ?? 0,
                             citations: row.int("citations") ?? 0, compliance: rate(row.int("compliant") ?? 0, n))
        }
        let links = sorts.map {
            SortLink(label: $0.label, href: "/?from=\(range.from)&to=\(range.to)&sort=\($0.key)", current: $0.key == sort.key)
        }
        return Pages.html(context, "dashboards/global", GlobalView(
            chrome: Pages.Chrome(title: "All agencies", caller: caller),
            picker: Picker(from: range.from, to: range.to, action: "/"), sortKey: sort.key, sortLinks: links, agencies: agencies,
            livePartition: agencies.map { Partition.agency($0.key) }.joined(separator: " ")))
    }

    // MARK: helpers

    static func rate(_ compliant: Int, _ total: Int) -> String {
        total == 0 ? "—" : String(format: "%.1f%%", 100 * Double(compliant) / Double(total))
    }

    static func hours(_ value: Double) -> String { String(format: "%.1f", value) }
}
