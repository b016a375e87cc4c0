import TidewayJSON

/// The vessels an agency meets at sea. Reports board vessels of a fixed fleet, so that
/// the same boat, captain and permit come back across reports as they do in real data
/// (searches by vessel, repeat offenders).
struct DemoVessel {
    var document: JSON  // the report's `vessel` without `lastDelivery`, which changes per trip
    var nationality: String
    var captain: JSON
    var crewRoster: [JSON]
    var fishery: String
    var gear: String
}

enum DemoFleet {
    static func make(size: Int, menu: MenuLists, area: PatrolArea, year: Int, random: inout DemoRandom) -> [DemoVessel] {
        // The local flag is listed twice: most boats met are local.
        let flags = [area.flags[0]] + area.flags + menu.countryPickerPriorityList
        var usedNames: Set<String> = []
        return (0..<size).map { _ in
            let flag = random.pick(flags)
            // Boats of one name are told apart by a number, as owners do: "Gaviota II".
            let baseName = ReportVocabulary.vesselName(flag: flag, random: &random)
            var name = baseName
            var copy = 2
            while usedNames.contains(name) {
                name = "\(baseName) \(copy <= 10 ? romanNumerals[copy - 2] : String(copy))"
                copy += 1
            }
            usedNames.insert(name)
            let emsTypes = random.sample(menu.emsTypes, count: random.pick([0, 1, 1, 1, 2]))
            let ems: [JSON] = emsTypes.map { emsEntry(type: $0, flag: flag, random: &random) }
            let permit = "\(flag)-\(random.int(in: year - 5...year))-\(DemoRandom.digits(random.below(100_000), 5))"
            return DemoVessel(
                document: [
                    "name": .string(name), "homePort": .string(random.pick(menu.ports)), "nationality": .string(flag),
                    "permitNumber": .string(permit), "ems": .array(ems),
                ],
                nationality: flag,
                captain: crewMember(flag: flag, license: "\(flag)-CAP-\(DemoRandom.digits(random.below(100_000), 5))", random: &random),
                crewRoster: (0..<random.int(in: 2...8)).map { _ in
                    crewMember(flag: flag, license: "\(flag)-\(DemoRandom.digits(random.below(1_000_000), 6))", random: &random)
                },
                fishery: random.pick(menu.fisheries), gear: random.pick(menu.gear))
        }
    }

    private static let romanNumerals = ["II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X"]

    private static func crewMember(flag: String, license: String, random: inout DemoRandom) -> JSON {
        ["name": .string(ReportVocabulary.personName(flag: flag, random: &random)), "license": .string(license)]
    }

    private static func emsEntry(type: String, flag: String, random: inout DemoRandom) -> JSON {
        let description = random.pick(ReportVocabulary.emsDescriptions[type] ?? ReportVocabulary.otherEMSDescriptions)
        // AIS registry numbers are MMSIs, whose first three digits are the flag's MID.
        let registry = type.contains("AIS")
            ? "\(mid[flag] ?? 999)\(DemoRandom.digits(random.below(1_000_000), 6))"
            : "REG-\(DemoRandom.digits(random.below(1_000_000), 6))"
        return ["emsType": .string(type), "emsDescription": .string(description), "registryNumber": .string(registry)]
    }

    /// Maritime identification digits (ITU) of the flags that occur in the demo.
    private static let mid: [String: Int] = [
        "EC": 735, "PA": 351, "CN": 412, "CO": 730, "PE": 760, "GA": 626, "ES": 224, "FR": 227, "SN": 663, "KR": 440,
        "CR": 321, "NI": 350, "TW": 416,
    ]
}
