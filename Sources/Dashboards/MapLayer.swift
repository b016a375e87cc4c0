import Database
import Drawing
import Foundation

/// The boardings of a map — a dashboard's, or the current filter of the boardings list —
/// fitted and drawn: up to `pointLimit` one by one (each linking to its report), more
/// binned on a grid of `binPixels`. Reads under the caller's row-level security.
package struct MapLayer {
    package var count = 0
    var view: MapView?
    var points: [Boarding] = []
    var bins: [MapBin] = []
    var areas: [MapArea] = []

    /// A boarding drawn one by one: a dot of its safety level's colour linking to its report.
    struct Boarding {
        let id: String, lon: Double, lat: Double, level: String?

        var point: MapPoint {
            let path = id.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/?#"))) ?? ""
            return MapPoint(lon: lon, lat: lat, color: SVG.safetyColor(level), href: "/boardings/" + path,
                            title: "Boarding \(id) · safety \(level ?? "not recorded")")
        }
    }

    /// At most this many boardings are drawn one by one; more are binned into a grid.
    static let pointLimit = 500
    /// Grid cell of the binned map, in pixels.
    static let binPixels = 18.0

    /// The newest located boardings of a condition on `sync.reports r`, one more than
    /// drawn (to tell whether they all fit).
    package static func pointsQuery(_ located: SQL) -> SQL {
        "select r.id, r.lon, r.lat, r.safety_level from sync.reports r where \(located) order by r.boarded_at desc, r.id limit \(pointLimit + 1)"
    }

    /// The located boardings' count and bounds (`located`, `w`, `e`, `s`, `north`).
    package static func boundsQuery(_ located: SQL) -> SQL {
        """
        select count(*) as located, min(r.lon) as w, max(r.lon) as e, min(r.lat) as s, max(r.lat) as north
          from sync.reports r where \(located)
        """
    }

    /// Fits the view to the boardings' bounds and the areas; keeps the points, or (when
    /// there are more than `pointLimit`) reads the bins, one more query.
    package static func fit(bounds: Row?, points pointRows: [Row], areas: [MapArea], located: SQL, _ tx: Transaction) throws -> MapLayer {
        var layer = MapLayer()
        layer.areas = areas
        layer.count = bounds?.int("located") ?? 0
        var lons = areas.flatMap { $0.ring.map(\.lon) }, lats = areas.flatMap { $0.ring.map(\.lat) }
        if let bounds, layer.count > 0 {
            lons += [bounds.double("w"), bounds.double("e")]
            lats += [bounds.double("s"), bounds.double("north")]
        }
        guard let lonMin = lons.min(), let lonMax = lons.max(), let latMin = lats.min(), let latMax = lats.max() else { return layer }
        let view = MapView(lonMin: lonMin, lonMax: lonMax, latMin: latMin, latMax: latMax)
        layer.view = view
        if layer.count <= pointLimit {
            layer.points = pointRows.map {
                Boarding(id: $0["id"] ?? "", lon: $0.double("lon"), lat: $0.double("lat"), level: $0["safety_level"])
            }
            return layer
        }
        let cellLon = binPixels / view.kx, cellLat = binPixels / view.ky
        let rows = try tx.query("""
            select floor((r.lon - \(view.west)) / \(cellLon))::int as gx, floor((\(view.north) - r.lat) / \(cellLat))::int as gy,
                   coalesce(r.safety_level, 'Not recorded') as level, count(*) as n
              from sync.reports r where \(located) group by 1, 2, 3
            """).rows
        var cells: [String: (gx: Int, gy: Int, counts: [String: Int])] = [:]
        for row in rows {
            let gx = row.int("gx") ?? 0, gy = row.int("gy") ?? 0
            cells["\(gx),\(gy)", default: (gx, gy, [:])].counts[row["level"] ?? "", default: 0] += row.int("n") ?? 0
        }
        layer.bins = cells.values.sorted { ($0.gy, $0.gx) < ($1.gy, $1.gx) }.map {
            MapBin(lon: view.west + (Double($0.gx) + 0.5) * cellLon, lat: view.north - (Double($0.gy) + 0.5) * cellLat, counts: $0.counts)
        }
        return layer
    }

    /// The SVG and the table of its numbers, for templates/dashboards/chart.mustache.
    package func chart(title: String, home: String, emptyText: String = "No boardings in this range.") -> DashboardPages.Chart {
        let svg = view.map {
            SVG.map(title: title, view: $0, land: LandPolygons.load(home + "/Data/geo/ne_110m_land.geojson"),
                    areas: areas, points: points.map(\.point), bins: bins)
        } ?? ""
        let rows: [DashboardPages.TableRow]
        if bins.isEmpty {
            rows = points.map { .init(cells: [$0.id, String(format: "%.4f", $0.lon), String(format: "%.4f", $0.lat), $0.level ?? "not recorded"]) }
        } else {
            rows = bins.map { b in
                .init(cells: ["\(b.total) boardings", String(format: "%.2f", b.lon), String(format: "%.2f", b.lat),
                              b.counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")])
            }
        }
        return DashboardPages.Chart(id: "map", heading: bins.isEmpty ? "Map of boardings" : "Map of boardings (\(count), grouped on a grid)",
                                    svg: svg, columns: ["Boarding", "Longitude", "Latitude", "Safety level"], rows: rows,
                                    empty: view == nil, emptyText: emptyText)
    }
}

extension Row {
    func double(_ name: String) -> Double { self[name].flatMap { Double($0) } ?? 0 }
}
