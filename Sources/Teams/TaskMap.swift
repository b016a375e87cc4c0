import Database
import Drawing
import Foundation

/// The map on a team's page: its tasks that have a position, or name one of the agency's
/// protected areas (drawn at the area's centre), as dots in their status's colour linking
/// to the task's row below; the agency's protected areas; land.
enum TaskMap {
    static let statusColors = [("open", SVG.palette[0]), ("in progress", SVG.palette[1]), ("done", SVG.palette[2])]

    /// The protected areas of the team's agency (those the caller may read).
    static func areasQuery(team p: String) -> SQL {
        MapArea.protectedAreasQuery(partition: "m.partition = (select 'agency=' || t.agency from app.teams t where 'team=' || t.id = \(p))")
    }

    static func figure(tasks: [TeamPages.Task], areas: [MapArea], home: String) -> Figure {
        let centres = Dictionary(areas.map { ($0.name, centre(of: $0.ring)) }, uniquingKeysWith: { a, _ in a })
        var located: [(task: TeamPages.Task, lon: Double, lat: Double, place: String)] = []
        for task in tasks {
            if let lon = task.lon, let lat = task.lat, (-180...180).contains(lon), (-90...90).contains(lat) {
                located.append((task, lon, lat, ""))
            } else if !task.mpa.isEmpty, let c = centres[task.mpa] {
                located.append((task, c.lon, c.lat, task.mpa))
            }
        }
        let named = Set(located.map(\.place))
        let shown = areas.filter { named.contains($0.name) }
        let lons = located.map(\.lon) + shown.flatMap { $0.ring.map(\.lon) }
        let lats = located.map(\.lat) + shown.flatMap { $0.ring.map(\.lat) }
        let columns = ["Task", "Status", "Longitude", "Latitude", "Protected area"]
        guard let lonMin = lons.min(), let lonMax = lons.max(), let latMin = lats.min(), let latMax = lats.max() else {
            return Figure(id: "map", heading: "Map of tasks", svg: "", columns: columns, rows: [], empty: true,
                          emptyText: "No task has a position or a protected area yet.")
        }
        let view = MapView(lonMin: lonMin, lonMax: lonMax, latMin: latMin, latMax: latMax)
        let colors = Dictionary(uniqueKeysWithValues: statusColors)
        let points = located.map { item in
            MapPoint(lon: item.lon, lat: item.lat, color: colors[item.task.status] ?? SVG.palette[7],
                     href: "#" + item.task.anchor,
                     title: "Task \(item.task.title) · \(item.task.status)" + (item.place.isEmpty ? "" : " · in \(item.place)"))
        }
        let svg = SVG.map(title: "Map of tasks", view: view, land: LandPolygons.load(home + "/Data/geo/ne_110m_land.geojson"),
                          areas: areas, points: points, bins: [],
                          legend: statusColors.map { (label: "Task " + $0.0, color: $0.1) })
        let rows = located.map {
            Figure.Row(cells: [$0.task.title, $0.task.status, String(format: "%.4f", $0.lon), String(format: "%.4f", $0.lat), $0.place])
        }
        return Figure(id: "map", heading: "Map of tasks", svg: svg, columns: columns, rows: rows, empty: false)
    }

    /// The mean of a ring's vertices (the closing vertex counted once): inside any convex
    /// area, and near enough for a marker in the others.
    static func centre(of ring: [(lon: Double, lat: Double)]) -> (lon: Double, lat: Double) {
        let open = ring.count > 1 && ring.first! == ring.last! ? Array(ring.dropLast()) : ring
        let n = Double(max(open.count, 1))
        return (open.map(\.lon).reduce(0, +) / n, open.map(\.lat).reduce(0, +) / n)
    }
}
