import Foundation
import Testing

@testable import Demo
@testable import Support
@testable import TidewayJSON

/// The repository's `Data/` folder, found from this file so that tests run from any directory.
private let dataRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Data")
private let now = Date(timeIntervalSince1970: 1_750_000_000)  // 2025-06-15T15:06:40Z

/// Sample agencies, users and a report generator per agency, built once per test.
private struct Fixture {
    let sample: DemoAgencies
    let users: [DemoUser]

    init() throws {
        sample = try DemoAgencies(dataDirectory: dataRoot.appendingPathComponent("ofish"))
        users = DemoUsers.all(agencies: sample.agencies)
    }

    func generator(_ key: String, seed: UInt64 = 42) -> ReportGenerator {
        ReportGenerator(
            seed: seed, agency: sample.agency(key: key)!, menu: sample.menu(for: key),
            officers: DemoUsers.officers(ofAgency: key, in: users), now: now)
    }
}

private let galapagosKeys = ["Parque Nacional Galápagos", "Ecuadorian Galapagos"]
private let allKeys = ["WildAid", "Gabon"] + galapagosKeys

@Suite struct DemoDataTests {
    @Test func loadsTheCopiedSampleData() throws {
        let sample = try Fixture().sample
        #expect(sample.agencies.map(\.key) == ["WildAid", "Gabon", "Parque Nacional Galápagos", "Ecuadorian Galapagos"])
        #expect(sample.agency(key: "Gabon")?.id == "5e5e431b146b99456ff12e6f")
        #expect(sample.agencies.allSatisfy { $0.key == $0.name && $0.active && !$0.email.isEmpty })
        // Gabon has no menu lists of its own and gets WildAid's, under an id of its own.
        #expect(sample.menu(for: "Gabon") == sample.menu(for: "WildAid"))
        #expect(sample.menuDataDocument(for: "WildAid")["_id"] == "5ef4f66c13f942bbc2a9ff5a")
        let gabonMenuID = try #require(sample.menuDataDocument(for: "Gabon")["_id"]?.stringValue)
        #expect(gabonMenuID.wholeMatch(of: /[0-9a-f]{24}/) != nil && gabonMenuID != "5ef4f66c13f942bbc2a9ff5a")
        #expect(sample.menu(for: "WildAid").violationCodes.count == sample.menu(for: "WildAid").violationDescriptions.count)
        #expect(FileManager.default.fileExists(atPath: dataRoot.appendingPathComponent("geo/ne_110m_land.geojson").path))
    }

    @Test func assignsMPAsToTheAgenciesWhoseWatersHoldThem() throws {
        let sample = try Fixture().sample
        #expect(sample.mpas(for: "WildAid").map(\.name) == ["Cocos Island Marine Preserve"])
        #expect(sample.mpas(for: "Gabon").isEmpty)
        let galapagos = galapagosKeys.flatMap { sample.mpas(for: $0) }
        #expect(galapagos.map(\.name) == ["Galapagos", "Galapagos"])
        #expect(galapagos[0].id != galapagos[1].id)
        for mpa in allKeys.flatMap({ sample.mpas(for: $0) }) {
            #expect(mpa.coordinates.count >= 4 && mpa.coordinates.first == mpa.coordinates.last)
            let document = mpa.document
            #expect(Set(document.objectValue!.keys) == ["_id", "name", "country", "description", "hexColor", "coordinates"])
        }
        let cocos = try #require(sample.mpas(for: "WildAid").first)
        // [lon, lat], not {lat, lon}. Within 1e-12 because Foundation's JSONSerialization on
        // Linux reads -87.09271102455706 one ulp off; our own parser is to read it exactly.
        #expect(abs(cocos.coordinates[0][0] - -87.09271102455706) < 1e-12 && cocos.coordinates[0][1] == 5.775524012401818)
        #expect(cocos.country == "Costa Rica" && cocos.hexColor == "FFC300")
    }

    @Test func jsonAdapterKeepsBooleansIntegersAndDoublesApart() throws {
        let object = try JSONSerialization.jsonObject(with: Data(#"{"b": true, "i": 1, "z": 0, "d": 1.5, "n": null, "a": ["x"]}"#.utf8))
        let json = try JSON(foundationObject: object)
        #expect(json == ["b": true, "i": .int(1), "z": .int(0), "d": .double(1.5), "n": .null, "a": ["x"]])
    }

    @Test func slugsDropCaseSpacesAndAccents() {
        #expect(DemoUsers.slug("Parque Nacional Galápagos") == "parquenacionalgalapagos")
        #expect(DemoUsers.slug("Ecuadorian Galapagos") == "ecuadoriangalapagos")
        #expect(DemoUsers.slug("WildAid") == "wildaid")
        #expect(DemoUsers.slug("Gabon") == "gabon")
        #expect(DemoUsers.slug("Côte d'Ivoire-Nord_2") == "cotedivoirenord2")
    }

    @Test func demoUsersHaveOneAdminAndTwoOfficersPerAgency() throws {
        let users = try Fixture().users
        #expect(users.count == 1 + 4 * 3)
        #expect(Set(users.map(\.email)).count == users.count)
        #expect(users.first { $0.email == "admin@demo.tideway" }?.role == .globalAdmin)
        let galapagos = users.filter { $0.agencyKey == "Parque Nacional Galápagos" }
        #expect(galapagos.map(\.email) == [
            "parquenacionalgalapagos.admin@demo.tideway", "parquenacionalgalapagos.officer1@demo.tideway",
            "parquenacionalgalapagos.officer2@demo.tideway",
        ])
        #expect(galapagos.map(\.role) == [.agencyAdmin, .officer, .officer])
        #expect(users.allSatisfy { !$0.name.first.isEmpty && !$0.name.last.isEmpty && $0.displayName == "\($0.name.first) \($0.name.last)" })
        #expect(Set(users.map(\.displayName)).count == users.count)
    }

    @Test func timestampsMatchFoundationsFormatter() {
        let formatter = ISO8601DateFormatter()
        for seconds: Int64 in [0, 951_782_400, 1_709_251_199, 1_750_000_000, 4_102_444_800, -86_401] {
            #expect(UTCTimestamp.string(epochSeconds: seconds) == formatter.string(from: Date(timeIntervalSince1970: Double(seconds))))
        }
    }

    @Test func sameSeedGivesTheSameReportsAndAnotherSeedOthers() throws {
        let fixture = try Fixture()
        let first = fixture.generator("Gabon").reports(count: 200)
        #expect(first == fixture.generator("Gabon").reports(count: 200))
        let other = fixture.generator("Gabon", seed: 43).reports(count: 200)
        #expect(zip(first, other).allSatisfy { $0 != $1 })
    }

    @Test(arguments: allKeys) func reportsHaveTheDocumentedShape(agencyKey: String) throws {
        let fixture = try Fixture()
        let menu = fixture.sample.menu(for: agencyKey)
        let officers = Set(DemoUsers.officers(ofAgency: agencyKey, in: fixture.users).map(\.email))
        let reports = fixture.generator(agencyKey).reports(count: 500)
        #expect(Set(reports.compactMap { $0["_id"]?.stringValue }.filter { $0.wholeMatch(of: /[0-9a-f]{24}/) != nil }).count == 500)
        for report in reports {
            let problems = Shape.report.problems(report)
            #expect(problems.isEmpty, "\(problems)")
            #expect(officers.contains(report["reportingOfficer"]?["email"]?.stringValue ?? ""))
            let inspection = report["inspection"]
            #expect(menu.species.contains(inspection?["actualCatch"]?.arrayValue?.first?["fish"]?.stringValue ?? menu.species[0]))
            #expect(menu.gear.contains(inspection?["gearType"]?["name"]?.stringValue ?? ""))
            #expect(menu.ports.contains(report["vessel"]?["homePort"]?.stringValue ?? ""))
            let safety = inspection?["summary"]?["safetyLevel"]
            #expect((safety?["level"] == "Amber") == (safety?["amberReason"] != ""))
            for violation in inspection?["summary"]?["violations"]?.arrayValue ?? [] {
                let index = try #require(menu.violationCodes.firstIndex(of: violation["offence"]?["code"]?.stringValue ?? ""))
                #expect(violation["offence"]?["explanation"]?.stringValue == menu.violationDescriptions[index])
            }
            let date = try #require(report["date"]?.stringValue), filed = try #require(report["timestamp"]?.stringValue)
            #expect(date <= filed && filed <= UTCTimestamp.string(now))
            #expect(date >= UTCTimestamp.string(now.addingTimeInterval(-548 * 86_400)))
        }
    }

    @Test(arguments: allKeys) func aboutAThirdOfBoardingsHaveAViolation(agencyKey: String) throws {
        let reports = try Fixture().generator(agencyKey).reports(count: 500)
        let withViolation = reports.filter { report in
            (report["inspection"]?["summary"]?["violations"]?.arrayValue ?? []).contains {
                ["Warning", "Citation"].contains($0["disposition"]?.stringValue)
            }
        }
        let share = Double(withViolation.count) / Double(reports.count)
        #expect((0.22...0.38).contains(share), "share \(share)")
        #expect(reports.filter { $0["draft"] == true }.count < 50)
    }
}
