import Database
import FastCGI
import Sync
import Web

/// `/boardings`: search, filter, sort and page through the boarding reports the caller may
/// read. One round trip: the page, the count, the pickers' lists and the agencies.
enum BoardingListPage {
    /// The columns a list row shows, read from the page's rows only.
    static let rowColumns = """
        r.id, r.partition, to_char(r.boarded_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI') as boarded,
        r.doc #>> '{vessel,name}' as vessel, r.doc #>> '{vessel,permitNumber}' as permit,
        r.doc #>> '{vessel,nationality}' as nationality, r.doc #>> '{captain,name}' as captain,
        concat_ws(' ', r.doc #>> '{reportingOfficer,name,first}', r.doc #>> '{reportingOfficer,name,last}') as officer_name,
        r.officer_key, r.safety_rank, r.violation_count, r.is_draft
        """

    struct Row {
        let id: String
        let href: String
        let date: String
        let vessel: String
        let permit: String
        let nationality: String
        let captain: String
        let officer: String
        let safety: String
        let safetyClass: String
        let violations: Int
        let agency: String
        let draft: Bool
    }

    struct Column {
        let label: String
        let href: String
        let ariaSort: String
        let arrow: String
    }

    struct Option {
        let value: String
        let label: String
        let selected: Bool
    }

    struct ActiveFilter {
        let label: String
        let removeHref: String
    }

    struct View {
        let chrome: Pages.Chrome
        /// The partitions whose changes the page offers to show (Static/live.js).
        let livePartitions: String
        let filter: FilterForm
        let rows: [Row]
        let hasRows: Bool
        let columns: [Column]
        let showAgency: Bool
        let total: Int
        let totalLabel: String
        let rangeLabel: String
        let nextHref: String?
        let previousHref: String?
        let firstHref: String?
        let pageSizes: [PageSizeLink]
        let csvHref: String
        let geojsonHref: String
        let mapHref: String
        let activeFilters: [ActiveFilter]
        let hasActiveFilters: Bool
        let clearHref: String
        let problems: [String]
        let canCreate: Bool
        let emptyWithoutFilters: Bool
    }

    struct PageSizeLink {
        let size: Int
        let href: String
        let current: Bool
    }

    /// What the filter form shows: the current values and the pickers' options.
    struct FilterForm {
        let q: String
        let from: String
        let to: String
        let officer: String
        let sort: String
        let dir: String
        let size: Int
        let agencies: [Option]
        let showAgency: Bool
        let safety: [Option]
        let violations: [Option]
        let dispositions: [Option]
        let nationalities: [Option]
        let species: [Option]
        let draft: [Option]
    }

    static func show(_ context: RequestContext) throws -> HTTPResponse {
        try WebSession.asUser(context, readOnly: true) { tx, caller in
            let isGlobal = caller.info.isGlobalAdmin
            let filter = BoardingFilter(query: context.query, allowAgency: isGlobal)
            let own = BoardingAccess.ownPartition(caller.info)
            var (rows, total, menuRows, agencyRows) = try tx.run(
                Statement.rows(filter.pageQuery(ownPartition: own, columns: rowColumns)),
                Statement.value("select count(*) as n from sync.reports r where " + filter.conditions(ownPartition: own), "n", as: Int.self),
                Statement.rows(BoardingMenus.query(agency: isGlobal ? (filter.agency.isEmpty ? nil : filter.agency) : caller.info.agency)),
                Statement.rows("select key, name from app.agencies order by name", as: AgencyName.self))
            let more = rows.count > filter.size
            if more { rows.removeLast() }
            if filter.before != nil { rows.reverse() }
            let menus = BoardingMenus(rows: menuRows)
            let agencies = agencyRows.map { ($0.key, $0.name) }
            let view = makeView(
                filter: filter, rows: rows, more: more, total: total ?? 0, menus: menus, agencies: agencies, caller: caller)
            return Pages.html(context, "boardings/list", view)
        }
    }

    static func makeView(filter: BoardingFilter, rows: [Row_], more: Bool, total: Int, menus: BoardingMenus,
                         agencies: [(String, String)], caller: PageCaller) -> View {
        let isGlobal = caller.info.isGlobalAdmin
        let listRows = rows.map { row -> Row in
            let rank = row.int("safety_rank") ?? 0
            let id = row["id"] ?? ""
            return Row(
                id: id, href: "/boardings/" + FormData.encode(id), date: row["boarded"] ?? "",
                vessel: nonEmpty(row["vessel"], "(no vessel name)"), permit: row["permit"] ?? "",
                nationality: row["nationality"] ?? "", captain: row["captain"] ?? "",
                officer: nonEmpty(row["officer_name"], row["officer_key"] ?? ""),
                safety: BoardingText.safetyName(rank), safetyClass: BoardingText.safetyClass(rank),
                violations: row.int("violation_count") ?? 0,
                agency: String((row["partition"] ?? "").dropFirst("agency=".count)), draft: row.bool("is_draft") ?? false)
        }
        let columns = BoardingFilter.SortKey.allCases.map { key -> Column in
            let active = key == filter.sort
            let nextDescending = active ? !filter.descending : key.defaultDescending
            let dir = nextDescending == key.defaultDescending ? "" : (nextDescending ? "desc" : "asc")
            return Column(
                label: key.label,
                href: filter.url(changing: ["sort": key == .date ? "" : key.rawValue, "dir": dir]),
                ariaSort: active ? (filter.descending ? "descending" : "ascending") : "none",
                arrow: active ? (filter.descending ? "▼" : "▲") : "")
        }
        // Keyset links: after the last row / before the first row of this page.
        func position(_ row: Row_?) -> String? {
            guard let row, let key = row["sort_key"], let id = row["id"] else { return nil }
            return BoardingFilter.encodePosition((key, id))
        }
        let goingBack = filter.before != nil
        let hasNext = goingBack ? true : more
        let hasPrevious = goingBack ? more : filter.after != nil
        let nextHref = hasNext ? position(rows.last).map { filter.url(changing: ["after": $0]) } : nil
        let previousHref = hasPrevious ? position(rows.first).map { filter.url(changing: ["before": $0]) } : nil
        let exportQuery = BoardingFilter.queryString(filter.parameters())

        let active = activeFilters(filter, path: "/boardings")

        func options(_ values: [String], selected: String, any: String) -> [Option] {
            var list = [Option(value: "", label: any, selected: selected.isEmpty)]
            var seen = Set<String>()
            for value in values where seen.insert(value).inserted {
                list.append(Option(value: value, label: value, selected: value == selected))
            }
            // A value from a shared URL that the menus do not list is still shown as chosen.
            if !selected.isEmpty, !seen.contains(selected) { list.append(Option(value: selected, label: selected, selected: true)) }
            return list
        }
        func labelled(_ pairs: [(String, String)], selected: String, any: String) -> [Option] {
            [Option(value: "", label: any, selected: selected.isEmpty)]
                + pairs.map { Option(value: $0.0, label: $0.1, selected: $0.0 == selected) }
        }
        let form = FilterForm(
            q: filter.text, from: filter.from, to: filter.to, officer: filter.officer,
            sort: filter.sort == .date ? "" : filter.sort.rawValue,
            dir: filter.descending == filter.sort.defaultDescending ? "" : (filter.descending ? "desc" : "asc"),
            size: filter.size,
            agencies: labelled(agencies, selected: filter.agency, any: "All agencies"), showAgency: isGlobal,
            safety: labelled([("Red", "Red"), ("Amber", "Amber"), ("Green", "Green")], selected: filter.safety, any: "Any"),
            violations: labelled([("yes", "With violations"), ("no", "Without violations")], selected: filter.violations, any: "Any"),
            dispositions: labelled([("Warning", "Warning"), ("Citation", "Citation"), ("none", "Neither")],
                                   selected: filter.disposition, any: "Any"),
            nationalities: options(menus.countries, selected: filter.nationality, any: "Any"),
            species: options(menus.species, selected: filter.species, any: "Any"),
            draft: labelled([("no", "Filed reports"), ("yes", "Drafts")], selected: filter.draft, any: "Any"))

        let first = listRows.isEmpty ? 0 : 1
        return View(
            chrome: Pages.Chrome(title: "Boardings", caller: caller),
            livePartitions: liveAgencies(isGlobal: isGlobal, filter: filter, caller: caller.info),
            filter: form, rows: listRows, hasRows: !listRows.isEmpty,
            columns: columns, showAgency: isGlobal, total: total,
            totalLabel: total == 1 ? "1 report" : "\(total.formatted(.number)) reports",
            rangeLabel: first == 0 ? "" : "showing \(listRows.count)",
            nextHref: nextHref, previousHref: previousHref,
            firstHref: (filter.after != nil || filter.before != nil) ? filter.url() : nil,
            pageSizes: BoardingFilter.pageSizes.map { size in
                PageSizeLink(size: size, href: filter.url(changing: ["size": size == 25 ? "" : String(size)]), current: size == filter.size)
            },
            csvHref: "/boardings.csv" + exportQuery, geojsonHref: "/boardings.geojson" + exportQuery,
            mapHref: "/boardings/map" + exportQuery,
            activeFilters: active, hasActiveFilters: !active.isEmpty, clearHref: "/boardings",
            problems: filter.problems, canCreate: BoardingAccess.canWrite(caller.info),
            emptyWithoutFilters: listRows.isEmpty && !filter.hasFilters && filter.after == nil && filter.before == nil)
    }

    /// The filters in use, each with a link to the same page without it.
    static func activeFilters(_ filter: BoardingFilter, path: String) -> [ActiveFilter] {
        var active: [ActiveFilter] = []
        func add(_ name: String, _ value: String, _ label: String) {
            if !value.isEmpty { active.append(ActiveFilter(label: label, removeHref: filter.url(path, changing: [name: ""]))) }
        }
        add("q", filter.text, "Search: “\(filter.text)”")
        add("from", filter.from, "From \(filter.from)")
        add("to", filter.to, "To \(filter.to)")
        add("agency", filter.agency, "Agency: \(filter.agency)")
        add("officer", filter.officer, "Officer: \(filter.officer)")
        add("safety", filter.safety, "Safety: \(filter.safety)")
        add("violations", filter.violations, filter.violations == "yes" ? "With violations" : "Without violations")
        add("disposition", filter.disposition, filter.disposition == "none" ? "No warning or citation" : "Disposition: \(filter.disposition)")
        add("nationality", filter.nationality, "Nationality: \(filter.nationality)")
        add("species", filter.species, "Species: \(filter.species)")
        add("draft", filter.draft, filter.draft == "yes" ? "Drafts only" : "No drafts")
        return active
    }

    /// The caller's agency; for a global admin the agency the list is narrowed to, if any (a
    /// stream of every agency's partitions would be more than nchan multiplexes on one page).
    static func liveAgencies(isGlobal: Bool, filter: BoardingFilter, caller: CallerInfo) -> String {
        if isGlobal { return filter.agency.isEmpty ? "" : Partition.agency(filter.agency) }
        return caller.agency.map(Partition.agency) ?? ""
    }

    typealias Row_ = Database.Row

    static func nonEmpty(_ text: String?, _ fallback: String) -> String {
        guard let text, !text.trimmingCharacters(in: .whitespaces).isEmpty else { return fallback }
        return text
    }
}

/// Who may do what with reports, as the policies decide it (0004): read own agency (global
/// admins: all), write own agency only. Used to show or hide links; the database decides.
enum BoardingAccess {
    static func ownPartition(_ caller: CallerInfo) -> String? {
        if caller.isGlobalAdmin { return nil }
        // Someone without an agency reads no reports: "agency=" is no partition at all.
        return "agency=" + (caller.agency ?? "")
    }

    static func canWrite(_ caller: CallerInfo) -> Bool { caller.agency != nil }
}

/// Words for stored values, shared by the list, the view and the exports.
enum BoardingText {
    static func safetyName(_ rank: Int) -> String {
        switch rank {
        case 3: "Red"
        case 2: "Amber"
        case 1: "Green"
        default: "—"
        }
    }

    static func safetyClass(_ rank: Int) -> String {
        switch rank {
        case 3: "safety-red"
        case 2: "safety-amber"
        case 1: "safety-green"
        default: "safety-none"
        }
    }
}

/// An agency's key and the name people see.
struct AgencyName: RowDecodable {
    let key: String
    let name: String

    init(row: Row) throws(DatabaseError) {
        key = try row.decode("key")
        name = try row.decode("name")
    }
}
