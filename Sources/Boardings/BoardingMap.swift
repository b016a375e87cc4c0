import Foundation
import Support
import TidewayJSON

/// A small map of a boarding's position, drawn by the server as SVG: an equirectangular box
/// of a few degrees around the point, Natural Earth's land (Data/geo), a degree grid and
/// the point. Only numbers the server computes go into the markup.
enum BoardingMap {
    static let width = 360.0
    static let height = 240.0
    /// Half the box, in degrees: about 330 km east–west near the equator.
    static let halfLon = 1.5
    static let halfLat = 1.0

    /// Land rings as [lon, lat] pairs with their bounding boxes, loaded once per worker.
    struct Ring: Sendable {
        let points: [(Double, Double)]
        let minLon, maxLon, minLat, maxLat: Double
    }

    static let land: [Ring] = loadLand()

    static func loadLand() -> [Ring] {
        let home = ProcessInfo.processInfo.environment["TIDEWAY_HOME"] ?? FileManager.default.currentDirectoryPath
        guard let data = FileManager.default.contents(atPath: home + "/Data/geo/ne_110m_land.geojson"),
              let json = try? JSON(parsing: Array(data)),
              let features = json["features"]?.arrayValue
        else {
            Log.warning("no land polygons in Data/geo: maps show the grid only")
            return []
        }
        var rings: [Ring] = []
        for feature in features {
            let geometry = feature["geometry"]
            let polygons: [JSON]
            switch geometry?["type"]?.stringValue {
            case "Polygon": polygons = [geometry?["coordinates"] ?? .null]
            case "MultiPolygon": polygons = geometry?["coordinates"]?.arrayValue ?? []
            default: polygons = []
            }
            for polygon in polygons {
                for ring in polygon.arrayValue ?? [] {
                    let points = (ring.arrayValue ?? []).compactMap { point -> (Double, Double)? in
                        guard let pair = point.arrayValue, pair.count >= 2, let lon = pair[0].doubleValue, let lat = pair[1].doubleValue
                        else { return nil }
                        return (lon, lat)
                    }
                    guard points.count >= 3 else { continue }
                    rings.append(Ring(
                        points: points, minLon: points.map(\.0).min()!, maxLon: points.map(\.0).max()!,
                        minLat: points.map(\.1).min()!, maxLat: points.map(\.1).max()!))
                }
            }
        }
        return rings
    }

    static func describe(lon: Double, lat: Double) -> String {
        let ns = lat < 0 ? "S" : "N"
        let ew = lon < 0 ? "W" : "E"
        return String(format: "%.4f° %@, %.4f° %@", abs(lat), ns, abs(lon), ew)
    }

    static func svg(lon: Double, lat: Double) -> String {
        guard lon.isFinite, lat.isFinite, abs(lon) <= 180, abs(lat) <= 90 else { return "" }
        let west = lon - halfLon, east = lon + halfLon
        let south = lat - halfLat, north = lat + halfLat
        func x(_ value: Double) -> Double { (value - west) / (east - west) * width }
        func y(_ value: Double) -> Double { (north - value) / (north - south) * height }
        func n(_ value: Double) -> String { String(format: "%.1f", value) }

        var out = """
            <svg class="map" viewBox="0 0 \(Int(width)) \(Int(height))" width="\(Int(width))" height="\(Int(height))" \
            role="img" aria-label="Map of the position \(describe(lon: lon, lat: lat))" xmlns="http://www.w3.org/2000/svg">\
            <rect width="100%" height="100%" fill="#d8ecf5"/>
            """
        for ring in land where ring.maxLon >= west && ring.minLon <= east && ring.maxLat >= south && ring.minLat <= north {
            let path = ring.points.enumerated().map { index, point in
                (index == 0 ? "M" : "L") + n(x(point.0)) + " " + n(y(point.1))
            }.joined()
            out += "<path d=\"\(path)Z\" fill=\"#e9e4d4\" stroke=\"#9a927a\" stroke-width=\"0.8\"/>"
        }
        var degree = west.rounded(.up)
        while degree <= east {
            out += "<line x1=\"\(n(x(degree)))\" y1=\"0\" x2=\"\(n(x(degree)))\" y2=\"\(Int(height))\" stroke=\"#9bbccc\" stroke-width=\"0.5\"/>"
            out += "<text x=\"\(n(x(degree) + 2))\" y=\"\(Int(height) - 4)\" font-size=\"9\" fill=\"#4a6a7a\">\(Int(degree))°</text>"
            degree += 1
        }
        degree = south.rounded(.up)
        while degree <= north {
            out += "<line x1=\"0\" y1=\"\(n(y(degree)))\" x2=\"\(Int(width))\" y2=\"\(n(y(degree)))\" stroke=\"#9bbccc\" stroke-width=\"0.5\"/>"
            out += "<text x=\"3\" y=\"\(n(y(degree) - 2))\" font-size=\"9\" fill=\"#4a6a7a\">\(Int(degree))°</text>"
            degree += 1
        }
        let cx = n(x(lon)), cy = n(y(lat))
        out += "<circle cx=\"\(cx)\" cy=\"\(cy)\" r=\"9\" fill=\"none\" stroke=\"#b3261e\" stroke-width=\"2\"/>"
        out += "<circle cx=\"\(cx)\" cy=\"\(cy)\" r=\"3\" fill=\"#b3261e\"/>"
        out += "</svg>"
        return out
    }
}
