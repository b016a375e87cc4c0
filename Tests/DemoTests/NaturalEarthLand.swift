import Foundation

/// The Natural Earth 1:110m land polygons of `Data/geo/`, for "is this point at sea?".
/// Small islands (the Galápagos among them) are not in this scale; tests check those apart.
struct NaturalEarthLand: CustomStringConvertible {
    private var rings: [[(lon: Double, lat: Double)]] = []

    init(file: URL) throws {
        let root = try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any]
        for feature in root?["features"] as? [[String: Any]] ?? [] {
            guard let geometry = feature["geometry"] as? [String: Any], let coordinates = geometry["coordinates"] as? [Any] else { continue }
            let polygons = geometry["type"] as? String == "MultiPolygon" ? coordinates : [coordinates]
            for case let polygon as [[[Double]]] in polygons {
                // Outer rings only: 1:110m land has no lakes cut out that the demo waters could fall in.
                if let outer = polygon.first { rings.append(outer.map { (lon: $0[0], lat: $0[1]) }) }
            }
        }
    }

    var ringCount: Int { rings.count }

    /// Short, so that a failed expectation does not print every vertex.
    var description: String { "Natural Earth land (\(rings.count) rings)" }

    /// Even-odd ray casting.
    func isLand(lon: Double, lat: Double) -> Bool {
        rings.contains { ring in
            var inside = false
            var previous = ring[ring.count - 1]
            for point in ring {
                if (point.lat > lat) != (previous.lat > lat),
                    lon < (previous.lon - point.lon) * (lat - point.lat) / (previous.lat - point.lat) + point.lon
                {
                    inside.toggle()
                }
                previous = point
            }
            return inside
        }
    }
}
