import Database
import Drawing
import Foundation
import Sync

/// Whose boardings a dashboard counts: one agency's, in a date range, optionally one
/// officer's. The derived facts (violation, compliant, boarding date, catch in kg, patrol
/// time) are defined once, in Migrations/0096 (app.report_facts); these queries only sum
/// the stored fact columns. They run in the signed-in user's transaction, under row-level
/// security, so nobody counts rows they cannot read.
struct DashboardScope {
    let agency: String
    let officerEmail: String?
    let range: DateRange

    var partition: String { Partition.agency(agency) }

    /// The boardings in scope, as a condition on `sync.reports r`.
    var boardings: SQL {
        var sql: SQL = """
            r.partition = \(partition) and r.is_boarding \
            and r.boarded_at >= \(range.startAt)::timestamptz and r.boarded_at < \(range.endAt)::timestamptz
            """
        if let officerEmail { sql = sql + " and r.officer_email = lower(\(officerEmail))" }
        return sql
    }

    var located: SQL { boardings + " and r.lon between -180 and 180 and r.lat between -90 and 90" }

    /// The days in scope, as a condition on a daily summary `b` (0051).
    var days: SQL { "b.partition = \(partition) and b.day between \(range.from)::date and \(range.to)::date" }
}

/// The sums every dashboard total reads from a daily summary.
private let summed: SQL = """
    sum(boardings) as n, sum(compliant) as compliant, sum(warnings) as warnings, sum(citations) as citations,
    sum(located) as located, min(west) as w, max(east) as e, min(south) as s, max(north) as north
    """

/// The numbers of one dashboard, read in one pipelined round trip (and a second one for
/// the map's bins when there are too many boardings to draw one by one).
struct DashboardData {
    struct Totals { var boardings = 0, compliant = 0, warnings = 0, citations = 0, hours = 0.0, days = 0 }
    struct Officer { let email: String; let boardings: Int; let violations: Int; let compliant: Int; let hours: Double }
    struct Recent { let id: String; let at: String; let vessel: String; let warnings: Int; let citations: Int; let level: String }

    var totals = Totals()
    var weeks: [ChartValue] = []
    var months: [(label: String, boardings: Int, compliant: Int)] = []
    var codes: [ChartValue] = []
    var catchKg: [ChartValue] = []
    var safety: [ChartValue] = []
    var officers: [Officer] = []
    var recent: [Recent] = []
    var map = MapLayer()

    static func read(_ tx: Transaction, _ scope: DashboardScope, agencyCharts: Bool) throws -> DashboardData {
        let f = scope.boardings
        let start = scope.range.startAt, end = scope.range.endAt
        // Counts come from the daily summaries (0051), which the job runner folds from the
        // reports' changes about every half second (0087); only the map's points and bins and
        // an officer's recent boardings read the reports themselves (so they are never stale).
        let summary: SQL = agencyCharts
            ? """
              select grouping(week, month, level) as g, to_char(week, 'YYYY-MM-DD') as week,
                     to_char(month, 'YYYY-MM') as month, level, \(summed)
                from (select date_trunc('week', b.day::timestamp) as week, date_trunc('month', b.day::timestamp) as month,
                             b.safety_level as level, b.*
                        from app.boarding_days b where \(scope.days)) days
               group by grouping sets ((), (week), (month), (level))
              """
            : """
              select 7 as g, null as week, null as month, null as level, \(summed)
                from app.officer_days b where \(scope.days) and b.officer_email = lower(\(scope.officerEmail ?? ""))
              """
        let patrolHours: SQL = agencyCharts
            ? """
              select who, sum(extract(epoch from ended - started)) / 3600 as hours, 0 as days
                from app.patrol_intervals(\(scope.agency), null, \(start)::timestamptz, \(end)::timestamptz) group by who
              """
            : """
              select '' as who, app.patrol_hours(\(scope.agency), \(scope.officerEmail), \(start)::timestamptz, \(end)::timestamptz) as hours,
                     app.patrol_days(\(scope.agency), \(scope.officerEmail), \(start)::timestamptz, \(end)::timestamptz) as days
              """
        let points = Statement.rows(MapLayer.pointsQuery(scope.located))
        let areas = Statement.rows(MapArea.protectedAreasQuery(partition: "m.partition = \(scope.partition)"))
        // One round trip either way: the shared statements and the view's own.
        guard agencyCharts else {
            let (summaryRows, patrol, pointRows, areaRows, recent) = try tx.run(
                Statement.rows(summary), Statement.rows(patrolHours), points, areas,
                Statement.rows("""
                    select r.id, to_char(r.boarded_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI') as at,
                           coalesce(r.doc -> 'vessel' ->> 'name', '') as vessel, r.warnings, r.citations,
                           coalesce(r.safety_level, '') as level
                      from sync.reports r where \(f) order by r.boarded_at desc, r.id limit 10
                    """))
            var data = try totalsAndMap(summaryRows, patrol, pointRows, areaRows, scope, tx).data
            data.recent = recent.map {
                Recent(id: $0["id"] ?? "", at: $0["at"] ?? "", vessel: $0["vessel"] ?? "",
                       warnings: $0.int("warnings") ?? 0, citations: $0.int("citations") ?? 0, level: $0["level"] ?? "")
            }
            return data
        }
        let (summaryRows, patrol, pointRows, areaRows, weekLabels, monthLabels, tallies, officerRows) = try tx.run(
            Statement.rows(summary), Statement.rows(patrolHours), points, areas,
            Statement.rows("""
                select to_char(w, 'YYYY-MM-DD') as label
                  from generate_series(date_trunc('week', \(start)::timestamptz at time zone 'UTC'),
                                       \(end)::timestamptz at time zone 'UTC' - interval '1 microsecond', interval '1 week') w
                """),
            Statement.rows("""
                select to_char(m, 'YYYY-MM') as label
                  from generate_series(date_trunc('month', \(start)::timestamptz at time zone 'UTC'),
                                       \(end)::timestamptz at time zone 'UTC' - interval '1 microsecond', interval '1 month') m
                """),
            Statement.rows("""
                select kind, key, sum(entries) as entries, sum(amount) as amount
                  from app.tally_days b where \(scope.days) group by 1, 2 having sum(entries) > 0
                """),
            Statement.rows("""
                select officer_email as email, sum(boardings) as n, sum(compliant) as compliant,
                       sum(warnings) + sum(citations) as violations
                  from app.officer_days b where \(scope.days) and officer_email <> ''
                 group by 1 having sum(boardings) > 0
                """))
        var (data, groups) = try totalsAndMap(summaryRows, patrol, pointRows, areaRows, scope, tx)
        let weeks = Dictionary(uniqueKeysWithValues: (groups[3] ?? []).map { ($0["week"] ?? "", $0.double("n")) })
        data.weeks = weekLabels.map { row in ChartValue(row["label"] ?? "", weeks[row["label"] ?? ""] ?? 0) }
        let months = Dictionary(uniqueKeysWithValues: (groups[5] ?? []).map { ($0["month"] ?? "", $0) })
        data.months = monthLabels.map { row in
            let m = months[row["label"] ?? ""]
            return (row["label"] ?? "", m?.int("n") ?? 0, m?.int("compliant") ?? 0)
        }
        let top: (String) -> [ChartValue] = { kind in
            tallies.filter { $0["kind"] == kind }
                .map { ChartValue($0["key"] ?? "", $0.double(kind == "code" ? "entries" : "amount")) }
                .sorted { ($0.value, $1.label) > ($1.value, $0.label) }
                .prefix(10).map { $0 }
        }
        data.codes = top("code")
        data.catchKg = top("fish")
        let levels = Dictionary((groups[6] ?? []).map { ($0["level"] ?? "", $0.double("n")) }, uniquingKeysWith: +)
        let known = ["Green", "Amber", "Red", "Not recorded"]
        data.safety = (known + levels.keys.sorted().filter { !known.contains($0) }).compactMap { level in
            levels[level].map { ChartValue(level, $0) }
        }
        // Officers: anyone with boardings in the range or patrol time in it (by e-mail).
        let hours = Dictionary(patrol.map { ($0["who"] ?? "", $0.double("hours")) }, uniquingKeysWith: +)
        var rows: [String: Officer] = [:]
        for row in officerRows {
            guard let email = row["email"] else { continue }
            rows[email] = Officer(email: email, boardings: row.int("n") ?? 0, violations: row.int("violations") ?? 0,
                                  compliant: row.int("compliant") ?? 0, hours: hours[email] ?? 0)
        }
        for (who, h) in hours where rows[who] == nil && who.contains("@") && h > 0 {
            rows[who] = Officer(email: who, boardings: 0, violations: 0, compliant: 0, hours: h)
        }
        data.officers = rows.values.sorted { ($1.boardings, $0.email) < ($0.boardings, $1.email) }
        return data
    }

    /// The totals and the map every dashboard shows; `groups` are the summary rows by their
    /// grouping set (a bit per column left out: 7 is the grand total).
    private static func totalsAndMap(_ summary: [Row], _ patrol: [Row], _ points: [Row], _ areas: [Row],
                                     _ scope: DashboardScope, _ tx: Transaction) throws -> (data: DashboardData, groups: [Int: [Row]]) {
        var data = DashboardData()
        let groups = Dictionary(grouping: summary) { $0.int("g") ?? -1 }
        let all = groups[7]?.first
        data.totals = Totals(boardings: all?.int("n") ?? 0, compliant: all?.int("compliant") ?? 0,
                             warnings: all?.int("warnings") ?? 0, citations: all?.int("citations") ?? 0,
                             hours: patrol.reduce(0) { $0 + $1.double("hours") }, days: patrol.first?.int("days") ?? 0)
        data.map = try MapLayer.fit(bounds: all, points: points, areas: MapArea.protectedAreas(areas), located: scope.located, tx)
        return (data, groups)
    }
}
