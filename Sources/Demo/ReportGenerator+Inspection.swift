import TidewayJSON

extension ReportGenerator {
    /// Share of boardings with at least one violation (Warning or Citation); O-FISH
    /// agencies reported compliance rates of roughly two in three to three in four.
    static let violationShare = 0.3

    mutating func inspection(vessel: DemoVessel, people: [JSON]) -> JSON {
        let species = random.sample(menu.species, count: random.int(in: 0...4))
        let actualCatch: [JSON] = species.map { fish in
            let number = random.int(in: 1...400)
            let kilograms = Double(number) * random.double(in: 0.5...25)
            let inPounds = random.chance(0.15)
            return [
                "fish": .string(fish), "number": .int(Int64(number)),
                "weight": .double(((inPounds ? kilograms * 2.20462 : kilograms) * 10).rounded() / 10),
                "unit": .string(inPounds ? "lbs" : "kg"),
            ]
        }

        let levelDraw = random.unit()
        let level = levelDraw < 0.8 ? "Green" : levelDraw < 0.94 ? "Amber" : "Red"
        var summary: JSONObject = [
            "safetyLevel": [
                "level": .string(level),
                "amberReason": .string(level == "Amber" ? random.pick(ReportVocabulary.amberReasons) : ""),
            ],
            "violations": .array(violations(people: people)),
        ]
        if summary["violations"]!.arrayValue!.contains(where: { $0["disposition"]?.stringValue == "Citation" }), random.chance(0.4) {
            summary["seizures"] = ["text": .string(ReportVocabulary.seizure(species: species.first ?? random.pick(menu.species), random: &random))]
        }
        return [
            "activity": ["name": .string(random.pick(menu.activities))],
            "fishery": ["name": .string(vessel.fishery)],
            "gearType": ["name": .string(vessel.gear)],
            "actualCatch": .array(actualCatch),
            "summary": .object(summary),
        ]
    }

    /// Violations carry a disposition; one left blank ("") is a noted suspicion that the
    /// officer did not pursue, which dashboards do not count as a violation.
    private mutating func violations(people: [JSON]) -> [JSON] {
        var dispositions: [String] = []
        if random.chance(Self.violationShare) {
            dispositions = (0..<random.pick([1, 1, 1, 2, 2, 3])).map { _ in random.chance(0.55) ? "Warning" : "Citation" }
        }
        if random.chance(0.05) { dispositions.append("") }
        return dispositions.map { disposition in
            let offence = random.below(Swift.min(menu.violationCodes.count, menu.violationDescriptions.count))
            var violation: JSONObject = [
                "disposition": .string(disposition),
                "offence": ["code": .string(menu.violationCodes[offence]), "explanation": .string(menu.violationDescriptions[offence])],
            ]
            if random.chance(0.35) { violation["crewMember"] = random.pick(people) }
            return .object(violation)
        }
    }
}
