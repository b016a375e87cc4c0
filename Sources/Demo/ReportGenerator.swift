import Foundation
import Support
import TidewayJSON

/// Boarding reports (`reports` documents, see docs/domain.md) for one agency, generated
/// from a seed: the same seed and inputs give the same documents, byte for byte.
///
/// It is an endless sequence that builds one report per `next()`, so 100,000 reports
/// cost no more memory than one: `for report in generator.prefix(100_000) { ... }`.
public struct ReportGenerator: Sequence, IteratorProtocol {
    /// Boardings are spread over the 548 days (18 months) before `now`.
    public static let windowDays = 548

    // Internal, not private: ReportGenerator+Inspection.swift draws from them too.
    var random: DemoRandom
    let menu: MenuLists
    private let officers: [DemoUser]
    private let area: PatrolArea
    private let fleet: [DemoVessel]
    private let nowSeconds: Int64

    /// `officers` are the agency's reporting officers (see `DemoUsers.officers(ofAgency:in:)`);
    /// `area` defaults to the agency's demo waters.
    public init(seed: UInt64, agency: DemoAgency, menu: MenuLists, officers: [DemoUser], now: Date, area: PatrolArea? = nil) {
        precondition(!officers.isEmpty, "a report needs a reporting officer")
        precondition(
            ![menu.ports, menu.fisheries, menu.species, menu.emsTypes, menu.activities, menu.gear, menu.violationCodes]
                .contains { $0.isEmpty },
            "the menu lists must not be empty")
        self.random = DemoRandom(seed: seed, stream: "reports/\(agency.key)")
        self.menu = menu
        self.officers = officers
        self.area = area ?? PatrolArea.demo(forAgencyKey: agency.key)
        self.nowSeconds = UTCTimestamp.epochSeconds(now)
        var fleetRandom = DemoRandom(seed: seed, stream: "fleet/\(agency.key)")
        let year = Int(UTCTimestamp.string(epochSeconds: nowSeconds).prefix(4)) ?? 2025
        self.fleet = DemoFleet.make(size: 60, menu: menu, area: self.area, year: year, random: &fleetRandom)
    }

    public func reports(count: Int) -> [JSON] {
        Array(prefix(count))
    }

    public mutating func next() -> JSON? {
        // Squaring the draw favours the first boats: some are boarded often, most rarely.
        let draw = random.unit()
        let vessel = fleet[Int(draw * draw * Double(fleet.count))]
        let date = boardingTime()
        let filed = Swift.min(nowSeconds, date + Int64(random.int(in: 15...240) * 60))
        let crew = (0..<random.int(in: 0...Swift.min(6, vessel.crewRoster.count))).map { vessel.crewRoster[$0] }

        var vesselDocument = vessel.document.objectValue!
        vesselDocument["lastDelivery"] = [
            "date": .string(UTCTimestamp.string(epochSeconds: date - Int64(random.int(in: 2 * 86_400...45 * 86_400)))),
            "location": .string(random.pick(menu.ports)),
            "business": .string(random.pick(ReportVocabulary.buyers)),
        ]
        var report: JSONObject = [
            "_id": .string(random.objectID(epochSeconds: filed)),
            "draft": .bool(random.chance(0.03)),
            "timestamp": .string(UTCTimestamp.string(epochSeconds: filed)),
            "date": .string(UTCTimestamp.string(epochSeconds: date)),
            "location": location(),
            "reportingOfficer": random.pick(officers).reference,
            "vessel": .object(vesselDocument),
            "captain": vessel.captain,
            "crew": .array(crew),
            "inspection": inspection(vessel: vessel, people: [vessel.captain] + crew),
        ]
        if random.chance(0.4) {
            report["notes"] = .array((0..<random.int(in: 1...2)).map { _ in ["note": .string(random.pick(ReportVocabulary.notes))] })
        }
        return .object(report)
    }

    /// Mostly in daylight, local time; never in the last hour (the report is filed after).
    private mutating func boardingTime() -> Int64 {
        let startOfToday = nowSeconds - ((nowSeconds % 86_400) + 86_400) % 86_400
        let secondOfLocalDay = random.chance(0.9) ? random.int(in: 6 * 3600...18 * 3600) : random.below(86_400)
        var date = startOfToday - Int64(random.below(Self.windowDays) * 86_400) + Int64(secondOfLocalDay - area.utcOffsetHours * 3600)
        if date > nowSeconds - 3600 { date -= 86_400 }
        if date < nowSeconds - Int64(Self.windowDays * 86_400) { date += 86_400 }
        return date
    }

    private mutating func location() -> JSON {
        while true {
            let lon = (random.double(in: area.lon) * 1e5).rounded() / 1e5  // ~1 m, as a GPS fix
            let lat = (random.double(in: area.lat) * 1e5).rounded() / 1e5
            if area.contains(lon: lon, lat: lat) { return [.double(lon), .double(lat)] }
        }
    }
}
