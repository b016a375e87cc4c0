import Database
import Foundation

/// Whose boardings a dashboard counts: one agency's, in a date range, optionally one
/// officer's. The derived facts (violation, compliant, boarding date, catch in kg, patrol
/// time) are defined once, in Migrations/0050_dashboard_facts.sql; these queries only sum
/// the generated columns. They run in the signed-in user's transaction, under row-level
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
}

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
    var mapCount = 0
    var view: MapView?
    var points: [MapPoint] = []
    var bins: [MapBin] = []
    var areas: [MapArea] = []

    /// At most this many boardings are drawn one by one; more are binned into a grid.
    static let pointLimit = 500
    /// Grid cell of the binned map, in pixels.
    static let binPixels = 18.0

    static func read(_ tx: Transaction, _ scope: DashboardScope, agencyCharts: Bool) throws -> DashboardData {
        let f = scope.boardings
        let start = scope.range.startAt, end = scope.range.endAt
        var statements: [SQL] = [
            """
            select count(*) as boardings, count(*) filter (where r.warnings + r.citations = 0) as compliant,
                   coalesce(sum(r.warnings), 0) as warnings, coalesce(sum(r.citations), 0) as citations
              from sync.reports r where \(f)
            """,
            """
            select app.patrol_hours(\(scope.agency), \(scope.officerEmail), \(start)::timestamptz, \(end)::timestamptz) as hours,
                   app.patrol_days(\(scope.agency), \(scope.officerEmail), \(start)::timestamptz, \(end)::timestamptz) as days
            """,
            """
            select count(*) as n, min(r.lon) as w, max(r.lon) as e, min(r.lat) as s, max(r.lat) as north
              from sync.reports r where \(scope.located)
            """,
            """
            select r.id, r.lon, r.lat, r.safety_level from sync.reports r where \(scope.located)
             order by r.boarded_at desc, r.id limit \(pointLimit + 1)
            """,
            """
            select m.doc ->> 'name' as name,
                   (select string_agg((c ->> 0) || ' ' || (c ->> 1), ',' order by o)
                      from jsonb_array_elements(case when jsonb_typeof(m.doc -> 'coordinates') = 'array'
                                                     then m.doc -> 'coordinates' else '[]' end) with ordinality e(c, o)
                     where jsonb_typeof(c -> 0) = 'number' and jsonb_typeof(c -> 1) = 'number') as ring
              from sync.mpas m where m.partition = \(scope.partition) and not m.deleted order by m.id
            """,
        ]
        if agencyCharts {
            statements += [
                """
                select to_char(w, 'YYYY-MM-DD') as label, count(r.id) as n
                  from generate_series(date_trunc('week', \(start)::timestamptz at time zone 'UTC'),
                                       \(end)::timestamptz at time zone 'UTC' - interval '1 microsecond', interval '1 week') w
                  left join sync.reports r on \(f) and date_trunc('week', r.boarded_at at time zone 'UTC') = w
                 group by w order by w
                """,
                """
                select to_char(m, 'YYYY-MM') as label, count(r.id) as n,
                       count(r.id) filter (where r.warnings + r.citations = 0) as compliant
                  from generate_series(date_trunc('month', \(start)::timestamptz at time zone 'UTC'),
                                       \(end)::timestamptz at time zone 'UTC' - interval '1 microsecond', interval '1 month') m
                  left join sync.reports r on \(f) and date_trunc('month', r.boarded_at at time zone 'UTC') = m
                 group by m order by m
                """,
                """
                select code, count(*) as n from sync.reports r, unnest(r.violation_codes) code
                 where \(f) group by code order by n desc, code limit 10
                """,
                """
                select c.key as species, sum(c.value::numeric) as kg from sync.reports r, jsonb_each_text(r.catch_kg) c
                 where \(f) group by c.key order by kg desc, c.key limit 10
                """,
                """
                select coalesce(r.safety_level, 'Not recorded') as level, count(*) as n
                  from sync.reports r where \(f) group by 1
                """,
                """
                with b as (
                    select r.officer_email as email, count(*) as n, sum(r.warnings + r.citations) as v,
                           count(*) filter (where r.warnings + r.citations = 0) as ok
                      from sync.reports r where \(f) and r.officer_email is not null group by 1
                ), d as (
                    select distinct lower(doc -> 'user' ->> 'email') as email from sync.duty_changes
                     where partition = \(scope.partition) and not deleted and doc -> 'user' ->> 'email' is not null
                ), rows as (
                    select email, coalesce(b.n, 0) as n, coalesce(b.v, 0) as v, coalesce(b.ok, 0) as ok,
                           app.patrol_hours(\(scope.agency), email, \(start)::timestamptz, \(end)::timestamptz) as hours
                      from b full join d using (email)
                )
                select * from rows where n > 0 or hours > 0 order by n desc, email
                """,
            ]
        } else {
            statements.append("""
                select r.id, to_char(r.boarded_at at time zone 'UTC', 'YYYY-MM-DD HH24:MI') as at,
                       coalesce(r.doc -> 'vessel' ->> 'name', '') as vessel, r.warnings, r.citations,
                       coalesce(r.safety_level, '') as level
                  from sync.reports r where \(f) order by r.boarded_at desc, r.id limit 10
                """)
        }
        let results = try tx.queries(statements)
        var data = DashboardData()
        let t = results[0].first!, patrol = results[1].first!
        data.totals = Totals(boardings: t.int("boardings") ?? 0, compliant: t.int("compliant") ?? 0,
                             warnings: t.int("warnings") ?? 0, citations: t.int("citations") ?? 0,
                             hours: patrol.double("hours"), days: patrol.int("days") ?? 0)
        data.areas = results[4].rows.compactMap { row in
            let ring = (row["ring"] ?? "").split(separator: ",").compactMap { pair -> (lon: Double, lat: Double)? in
                let xy = pair.split(separator: " ")
                guard xy.count == 2, let lon = Double(xy[0]), let lat = Double(xy[1]) else { return nil }
                return (lon, lat)
            }
            return ring.count >= 3 ? MapArea(name: row["name"] ?? "Protected area", ring: ring) : nil
        }
        try data.readMap(results[2].first!, results[3], tx, scope)
        if agencyCharts {
            data.weeks = results[5].rows.map { ChartValue($0["label"] ?? "", $0.double("n")) }
            data.months = results[6].rows.map { ($0["label"] ?? "", $0.int("n") ?? 0, $0.int("compliant") ?? 0) }
            data.codes = results[7].rows.map { ChartValue($0["code"] ?? "", $0.double("n")) }
            data.catchKg = results[8].rows.map { ChartValue($0["species"] ?? "", $0.double("kg")) }
            let levels = Dictionary(results[9].rows.map { ($0["level"] ?? "", $0.double("n")) }, uniquingKeysWith: +)
            data.safety = (["Green", "Amber", "Red", "Not recorded"] + levels.keys.sorted().filter {
                !["Green", "Amber", "Red", "Not recorded"].contains($0)
            }).compactMap { level in levels[level].map { ChartValue(level, $0) } }
            data.officers = results[10].rows.map {
                Officer(email: $0["email"] ?? "", boardings: $0.int("n") ?? 0, violations: $0.int("v") ?? 0,
                        compliant: $0.int("ok") ?? 0, hours: $0.double("hours"))
            }
        } else {
            data.recent = results[5].rows.map {
                Recent(id: $0["id"] ?? "", at: $0["at"] ?? "", vessel: $0["vessel"] ?? "",
                       warnings: $0.int("warnings") ?? 0, citations: $0.int("citations") ?? 0, level: $0["level"] ?? "")
            }
        }
        return data
    }

    /// Fits the map to the boardings and protected areas; draws points, or bins them.
    private mutating func readMap(_ bounds: Row, _ pointRows: QueryResult, _ tx: Transaction, _ scope: DashboardScope) throws {
        mapCount = bounds.int("n") ?? 0
        var lons = areas.flatMap { $0.ring.map(\.lon) }, lats = areas.flatMap { $0.ring.map(\.lat) }
        if mapCount > 0 {
            lons += [bounds.double("w"), bounds.double("e")]
            lats += [bounds.double("s"), bounds.double("north")]
        }
        guard let lonMin = lons.min(), let lonMax = lons.max(), let latMin = lats.min(), let latMax = lats.max() else { return }
        let view = MapView(lonMin: lonMin, lonMax: lonMax, latMin: latMin, latMax: latMax)
        self.view = view
        if mapCount <= Self.pointLimit {
            points = pointRows.rows.map {
                MapPoint(id: $0["id"] ?? "", lon: $0.double("lon"), lat: $0.double("lat"), level: $0["safety_level"])
            }
            return
        }
        let cellLon = Self.binPixels / view.kx, cellLat = Self.binPixels / view.ky
        let rows = try tx.query("""
            select floor((r.lon - \(view.west)) / \(cellLon))::int as gx, floor((\(view.north) - r.lat) / \(cellLat))::int as gy,
                   coalesce(r.safety_level, 'Not recorded') as level, count(*) as n
              from sync.reports r where \(scope.located) group by 1, 2, 3
            """).rows
        var cells: [String: (gx: Int, gy: Int, counts: [String: Int])] = [:]
        for row in rows {
            let gx = row.int("gx") ?? 0, gy = row.int("gy") ?? 0
            cells["\(gx),\(gy)", default: (gx, gy, [:])].counts[row["level"] ?? "", default: 0] += row.int("n") ?? 0
        }
        bins = cells.values.sorted { ($0.gy, $0.gx) < ($1.gy, $1.gx) }.map {
            MapBin(lon: view.west + (Double($0.gx) + 0.5) * cellLon, lat: view.north - (Double($0.gy) + 0.5) * cellLat, counts: $0.counts)
        }
    }
}

extension Row {
    func double(_ name: String) -> Double { self[name].flatMap { Double($0) } ?? 0 }
}
