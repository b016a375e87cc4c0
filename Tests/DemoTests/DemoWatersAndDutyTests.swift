import Foundation
import Testing

@testable import Demo

private let dataRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Data")
private let now = Date(timeIntervalSince1970: 1_750_000_000)

private func sampleUsers() throws -> (DemoAgencies, [DemoUser]) {
    let sample = try DemoAgencies(dataDirectory: dataRoot.appendingPathComponent("ofish"))
    return (sample, DemoUsers.all(agencies: sample.agencies))
}

/// Where each agency's boardings must be, stated apart from the generator's own areas.
private let expectedBoxes: [String: (lon: ClosedRange<Double>, lat: ClosedRange<Double>)] = [
    "Parque Nacional Galápagos": (-92.6 ... -88.4, -2.8...1.3),
    "Ecuadorian Galapagos": (-92.6 ... -88.4, -2.8...1.3),
    "Gabon": (6.0...9.3, -4.0...0.5),
    "WildAid": (-92.0 ... -84.0, 3.0...9.0),
]

/// Rough bounding boxes of the main Galápagos islands (too small for 1:110m land).
private let galapagosIslands: [(lon: ClosedRange<Double>, lat: ClosedRange<Double>)] = [
    (-91.7 ... -90.75, -1.1...0.17), (-91.7 ... -91.3, -0.5 ... -0.2), (-90.6 ... -90.15, -0.85 ... -0.5),
    (-89.65 ... -89.2, -0.95 ... -0.65), (-90.95 ... -90.55, -0.35 ... -0.15), (-89.8 ... -89.6, -1.42 ... -1.33),
    (-90.55 ... -90.35, -1.35 ... -1.2), (-90.8 ... -90.7, 0.5...0.65), (-90.55 ... -90.4, 0.28...0.4), (-90.0 ... -89.93, 0.29...0.35),
]

@Suite struct DemoWatersAndDutyTests {
    @Test func boardingsAreInTheAgencysWatersAndAtSea() throws {
        let (sample, users) = try sampleUsers()
        let land = try NaturalEarthLand(file: dataRoot.appendingPathComponent("geo/ne_110m_land.geojson"))
        #expect(land.ringCount > 100)
        #expect(land.isLand(lon: 11.5, lat: -1.0) && !land.isLand(lon: 8.0, lat: -1.5))  // inland Gabon, its sea
        for agency in sample.agencies {
            let box = try #require(expectedBoxes[agency.key])
            let generator = ReportGenerator(
                seed: 7, agency: agency, menu: sample.menu(for: agency.key),
                officers: DemoUsers.officers(ofAgency: agency.key, in: users), now: now)
            for report in generator.prefix(300) {
                let point = report["location"]?.arrayValue?.compactMap(\.doubleValue) ?? []
                try #require(point.count == 2)
                let (lon, lat) = (point[0], point[1])
                #expect(box.lon.contains(lon) && box.lat.contains(lat), "\(agency.key): \(point)")
                #expect(!land.isLand(lon: lon, lat: lat), "\(agency.key): \(point) on land")
                if agency.key == "Gabon" { #expect(lon < 9.3) }
                #expect(!galapagosIslands.contains { $0.lon.contains(lon) && $0.lat.contains(lat) }, "\(point) on an island")
            }
        }
    }

    @Test func dutyChangesAlternatePerOfficerWithRealisticShifts() throws {
        let (_, users) = try sampleUsers()
        let officers = DemoUsers.officers(ofAgency: "Gabon", in: users)
        let changes = DutyChangeGenerator(seed: 1, officers: officers, now: now, utcOffsetHours: 1).changes()
        #expect(changes == DutyChangeGenerator(seed: 1, officers: officers, now: now, utcOffsetHours: 1).changes())
        #expect(changes != DutyChangeGenerator(seed: 2, officers: officers, now: now, utcOffsetHours: 1).changes())
        #expect(Set(changes.compactMap { $0["_id"]?.stringValue }).count == changes.count)

        let formatter = ISO8601DateFormatter()
        for officer in officers {
            let mine = changes.filter { $0["user"] == officer.reference }
            let dates = mine.compactMap { $0["date"]?.stringValue.flatMap(formatter.date(from:)) }
            #expect(dates.count == mine.count && dates == dates.sorted())
            #expect(dates.allSatisfy { $0 <= now && $0 >= now.addingTimeInterval(-549 * 86_400) })
            // About four shifts a week over 18 months.
            #expect((250...450).contains(mine.count / 2), "\(mine.count) changes")
            for (index, change) in mine.enumerated() {
                #expect(Set(change.objectValue!.keys) == ["_id", "user", "date", "status"])
                #expect(change["status"]?.stringValue == (index.isMultiple(of: 2) ? "On Duty" : "Off Duty"))
                if index % 2 == 1 {
                    let hours = dates[index].timeIntervalSince(dates[index - 1]) / 3600
                    #expect((6...14).contains(hours), "shift of \(hours) h")
                }
            }
        }
    }

    @Test func conversationsAreAmongDemoUsers() throws {
        let (_, users) = try sampleUsers()
        let conversations = DemoConversations.all(users: users, now: now)
        #expect(conversations.count == 4)
        #expect(Set(conversations.map(\.id)).count == conversations.count)
        let emails = Set(users.map(\.email))
        for conversation in conversations {
            #expect(conversation.memberEmails.count >= 2 && conversation.memberEmails.allSatisfy(emails.contains))
            #expect(conversation.messages.allSatisfy { conversation.memberEmails.contains($0.authorEmail) && $0.timestamp < now })
            #expect(conversation.messages.map(\.timestamp) == conversation.messages.map(\.timestamp).sorted())
        }
        // Without the Gabon users, the chats they are in are left out rather than half-empty.
        let withoutGabon = DemoConversations.all(users: users.filter { $0.agencyKey != "Gabon" }, now: now)
        #expect(withoutGabon.map(\.displayName) == ["Galápagos joint patrol", "Daniel & Priya"])
    }
}
