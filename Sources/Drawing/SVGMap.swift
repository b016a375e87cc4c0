import Foundation
import Support
import Synchronization

/// A thing drawn as a dot on a map (a boarding, a team's task): its colour, the page it
/// links to (already a URL path: percent-encoded by the caller), and its tooltip.
public struct MapPoint: Sendable {
    public let lon: Double
    public let lat: Double
    public let color: String
    public let href: String?
    public let title: String
    public init(lon: Double, lat: Double, color: String, href: String?, title: String) {
        self.lon = lon
        self.lat = lat
        self.color = color
        self.href = href
        self.title = title
    }
}

/// Boardings counted in one grid cell (when there are too many to draw one by one).
public struct MapBin: Sendable {
    public let lon: Double
    public let lat: Double
    public let counts: [String: Int]
    public var total: Int { counts.values.reduce(0, +) }
    public init(lon: Double, lat: Double, counts: [String: Int]) {
        self.lon = lon
        self.lat = lat
        self.counts = counts
    }
}

/// A protected area (or a land polygon): a closed ring of [lon, lat].
public struct MapArea: Sendable {
    public let name: String
    public let ring: [(lon: Double, lat: Double)]
    public init(name: String, ring: [(lon: Double, lat: Double)]) {
        self.name = name
        self.ring = ring
    }
}

/// Equirectangular projection fitted to a lon/lat box, scaled by cos(middle latitude) so
/// that shapes near the equator and at mid latitudes both look right.
public struct MapView: Sendable {
    public let width: Double, height: Double
    public let west: Double, north: Double
    /// Pixels per degree of longitude and of latitude.
    public let kx: Double, ky: Double

    /// The smallest view that holds the box with a margin, widened to the canvas's shape.
    public init(lonMin: Double, lonMax: Double, latMin: Double, latMax: Double, width: Double = 640, height: Double = 420) {
        self.width = width
        self.height = height
        let midLat = (latMin + latMax) / 2
        let stretch = max(cos(midLat * .pi / 180), 0.2)
        let spanLon = max(lonMax - lonMin, 0.5) * 1.15, spanLat = max(latMax - latMin, 0.5) * 1.15
        let k = min(width / (spanLon * stretch), height / spanLat)
        kx = k * stretch
        ky = k
        west = (lonMin + lonMax) / 2 - width / kx / 2
        north = (latMin + latMax) / 2 + height / ky / 2
    }

    public func x(_ lon: Double) -> Double { (lon - west) * kx }
    public func y(_ lat: Double) -> Double { (north - lat) * ky }
    public var east: Double { west + width / kx }
    public var south: Double { north - height / ky }
}

extension SVG {
    /// The safety levels of boardings, the legend of the boardings' maps.
    public static let safetyLegend = ["Green", "Amber", "Red"].map { (label: "Safety " + $0, color: safetyColor($0)) }

    /// The map: land, protected areas, then the points (each linking to its page) or bins
    /// of boardings with counts, and a legend of the points' colours.
    public static func map(title: String, view: MapView, land: [MapArea], areas: [MapArea],
                           points: [MapPoint], bins: [MapBin], legend: [(label: String, color: String)] = safetyLegend) -> String {
        var s = open(title, width: Int(view.width), height: Int(view.height), cssClass: "map")
        s += "<rect width=\"\(n(view.width))\" height=\"\(n(view.height))\" fill=\"#dcebf3\"/>"
        s += "<g class=\"land\" fill=\"#efe9dc\" stroke=\"#b9ad94\" stroke-width=\"0.6\">"
        for ring in land {
            if let d = clippedPath(ring.ring, view) { s += "<path d=\"\(d)\"/>" }
        }
        s += "</g><g class=\"mpas\">"
        for (i, area) in areas.enumerated() {
            guard let d = clippedPath(area.ring, view) else { continue }
            let color = palette[(i + 4) % palette.count]
            s += "<path class=\"mpa\" d=\"\(d)\" fill=\"\(color)\" fill-opacity=\"0.25\" stroke=\"\(color)\" stroke-width=\"1.5\"><title>\(escape(area.name)) (protected area)</title></path>"
        }
        s += "</g><g class=\"points\">"
        for p in points {
            let dot = "<circle class=\"point\" cx=\"\(n(view.x(p.lon)))\" cy=\"\(n(view.y(p.lat)))\" r=\"5\" "
                + "fill=\"\(escape(p.color))\" stroke=\"#fff\" stroke-width=\"1\"><title>\(escape(p.title))</title></circle>"
            s += p.href.map { "<a href=\"\(escape($0))\">\(dot)</a>" } ?? dot
        }
        for b in bins {
            // The cell's colour is its most frequent level; its size grows with the count.
            let level = b.counts.max { $0.value < $1.value || ($0.value == $1.value && $0.key > $1.key) }?.key
            let r = min(4 + 2.2 * sqrt(Double(b.total)), 22)
            let detail = b.counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
            s += "<circle class=\"bin\" cx=\"\(n(view.x(b.lon)))\" cy=\"\(n(view.y(b.lat)))\" r=\"\(n(r))\" fill=\"\(safetyColor(level))\" fill-opacity=\"0.8\" stroke=\"#fff\">"
                + "<title>\(b.total) boardings here (\(escape(detail)))</title></circle>"
        }
        s += "</g>"
        let legendTop = view.height - 24 - 18 * Double(legend.count)
        s += "<g class=\"legend\"><rect x=\"6\" y=\"\(n(legendTop - 6))\" width=\"130\" height=\"\(n(26 + 18 * Double(legend.count)))\" fill=\"#fff\" fill-opacity=\"0.85\"/>"
        for (i, entry) in legend.enumerated() {
            let y = legendTop + Double(i) * 18
            s += "<circle cx=\"18\" cy=\"\(n(y + 6))\" r=\"5\" fill=\"\(escape(entry.color))\"/><text x=\"30\" y=\"\(n(y + 10))\">\(escape(entry.label))</text>"
        }
        let areaTop = legendTop + 18 * Double(legend.count)
        s += "<rect x=\"12\" y=\"\(n(areaTop))\" width=\"12\" height=\"10\" fill=\"\(palette[4])\" fill-opacity=\"0.35\"/><text x=\"30\" y=\"\(n(areaTop + 10))\">Protected area</text></g>"
        return s + "</svg>"
    }

    /// A ring projected, clipped to the view (Sutherland–Hodgman against each edge, with a
    /// margin so that clipped edges stay off-canvas) and thinned to about one point per
    /// pixel. Nil when nothing of it is in view.
    static func clippedPath(_ ring: [(lon: Double, lat: Double)], _ view: MapView) -> String? {
        guard ring.count >= 3 else { return nil }
        // Cheap rejection by bounding box before projecting every vertex.
        var lo = (lon: Double.infinity, lat: Double.infinity), hi = (lon: -Double.infinity, lat: -Double.infinity)
        for p in ring {
            lo = (min(lo.lon, p.lon), min(lo.lat, p.lat))
            hi = (max(hi.lon, p.lon), max(hi.lat, p.lat))
        }
        guard hi.lon >= view.west, lo.lon <= view.east, hi.lat >= view.south, lo.lat <= view.north else { return nil }
        var poly = ring.map { (x: view.x($0.lon), y: view.y($0.lat)) }
        let m = 4.0
        let edges: [((x: Double, y: Double)) -> Double] = [
            { $0.x + m }, { view.width + m - $0.x }, { $0.y + m }, { view.height + m - $0.y },
        ]
        for inside in edges {
            guard !poly.isEmpty else { return nil }
            var out: [(x: Double, y: Double)] = []
            var prev = poly[poly.count - 1]
            for cur in poly {
                let a = inside(prev), b = inside(cur)
                if (a >= 0) != (b >= 0) {
                    let t = a / (a - b)
                    out.append((prev.x + t * (cur.x - prev.x), prev.y + t * (cur.y - prev.y)))
                }
                if b >= 0 { out.append(cur) }
                prev = cur
            }
            poly = out
        }
        guard poly.count >= 3 else { return nil }
        var d = "", last = (x: Double.infinity, y: Double.infinity), kept = 0
        for p in poly where abs(p.x - last.x) + abs(p.y - last.y) >= 1 {
            d += (kept == 0 ? "M" : "L") + n(p.x) + " " + n(p.y)
            last = p
            kept += 1
        }
        return kept >= 3 ? d + "Z" : nil
    }
}

/// Natural Earth land rings, read once per file.
public enum LandPolygons {
    private static let cache = Mutex<[String: [MapArea]]>([:])

    public static func load(_ path: String) -> [MapArea] {
        if let hit = cache.withLock({ $0[path] }) { return hit }
        var rings: [MapArea] = []
        if let data = FileManager.default.contents(atPath: path),
           let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any] {
            for feature in root["features"] as? [[String: Any]] ?? [] {
                guard let geometry = feature["geometry"] as? [String: Any], let coordinates = geometry["coordinates"] as? [Any] else { continue }
                let polygons = geometry["type"] as? String == "MultiPolygon" ? coordinates : [coordinates]
                for case let polygon as [[[Double]]] in polygons {
                    if let outer = polygon.first {
                        rings.append(MapArea(name: "land", ring: outer.compactMap { $0.count >= 2 ? (lon: $0[0], lat: $0[1]) : nil }))
                    }
                }
            }
        } else {
            Log.error("no land polygons at \(path): maps are drawn without land")
        }
        cache.withLock { $0[path] = rings }
        return rings
    }
}
