/// Where an agency's officers board vessels: a lon/lat box minus circles kept clear
/// (islands inside the box). Every area is drawn offshore, so generated boardings are
/// at sea without a land-polygon test at generation time.
public struct PatrolArea: Sendable, Equatable {
    public struct Circle: Sendable, Equatable {
        public var lon: Double
        public var lat: Double
        public var radius: Double  // in degrees
    }

    public var lon: ClosedRange<Double>
    public var lat: ClosedRange<Double>
    public var keepClear: [Circle]
    /// Flags (ISO 3166 alpha-2) of the vessels met there, the local flag first.
    public var flags: [String]
    /// Whole hours from UTC of local time, so that boardings and shifts happen by day.
    public var utcOffsetHours: Int

    public func contains(lon x: Double, lat y: Double) -> Bool {
        lon.contains(x) && lat.contains(y)
            && keepClear.allSatisfy { (x - $0.lon) * (x - $0.lon) + (y - $0.lat) * (y - $0.lat) > $0.radius * $0.radius }
    }

    /// Around the Galápagos archipelago (centre -90.5/-0.7), outside a 1.5° circle that
    /// holds every main island, inside the marine reserve. Boardings there are mostly of
    /// vessels on the reserve's edge, which matches how the reserve is patrolled.
    public static let galapagos = PatrolArea(
        lon: -92.5 ... -88.5, lat: -2.6 ... 1.2,
        keepClear: [Circle(lon: -90.5, lat: -0.7, radius: 1.5)],
        flags: ["EC", "PA", "CN", "CO", "PE"], utcOffsetHours: -6)

    /// Off Gabon, west of the coastline (which is east of 8.7° at these latitudes).
    public static let gabon = PatrolArea(
        lon: 6.9 ... 8.5, lat: -3.0 ... 0.0, keepClear: [],
        flags: ["GA", "CN", "ES", "FR", "SN", "KR"], utcOffsetHours: 1)

    /// The Pacific off Costa Rica around Cocos Island, well off the mainland coast.
    public static let centralAmericanPacific = PatrolArea(
        lon: -90.0 ... -86.0, lat: 4.0 ... 8.0,
        keepClear: [Circle(lon: -87.06, lat: 5.53, radius: 0.12)],  // Cocos Island
        flags: ["CR", "PA", "NI", "EC", "CO", "TW"], utcOffsetHours: -6)

    /// The area of a sample agency by its key; any other agency patrols WildAid's waters.
    public static func demo(forAgencyKey key: String) -> PatrolArea {
        switch DemoUsers.slug(key) {
        case "parquenacionalgalapagos", "ecuadoriangalapagos": return .galapagos
        case "gabon": return .gabon
        default: return .centralAmericanPacific
        }
    }
}
