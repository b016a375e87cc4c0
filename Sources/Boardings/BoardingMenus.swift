import Database
import TidewayJSON

/// The agency's menu lists (the `menuData` document of its partition, domain.md) that the
/// pickers offer: species, gear, ports, violation codes with their descriptions. Several
/// agencies' lists (a global admin's list page) are merged, in order, without repeats.
struct BoardingMenus {
    var countries: [String] = []
    var ports: [String] = []
    var fisheries: [String] = []
    var species: [String] = []
    var emsTypes: [String] = []
    var activities: [String] = []
    var gear: [String] = []
    /// (code, description) pairs: the lists are parallel.
    var violations: [(code: String, description: String)] = []

    /// The menu documents of one agency, or of every agency the caller reads when nil.
    static func query(agency: String?) -> SQL {
        if let agency {
            return "select doc::text as doc from sync.menu_data where partition = \("agency=" + agency) and not deleted order by id"
        }
        return "select doc::text as doc from sync.menu_data where not deleted order by partition, id"
    }

    init() {}

    init(rows: [Row]) {
        for row in rows {
            guard let text = row["doc"], let doc = try? JSON(parsing: text) else { continue }
            func list(_ name: String) -> [String] { doc[name]?.arrayValue?.compactMap(\.stringValue) ?? [] }
            countries = Self.merge(countries, list("countryPickerPriorityList"))
            ports = Self.merge(ports, list("ports"))
            fisheries = Self.merge(fisheries, list("fisheries"))
            species = Self.merge(species, list("species"))
            emsTypes = Self.merge(emsTypes, list("emsTypes"))
            activities = Self.merge(activities, list("activities"))
            gear = Self.merge(gear, list("gear"))
            let codes = list("violationCodes")
            let descriptions = list("violationDescriptions")
            for (index, code) in codes.enumerated() where !violations.contains(where: { $0.code == code }) {
                violations.append((code, index < descriptions.count ? descriptions[index] : ""))
            }
        }
    }

    static func merge(_ a: [String], _ b: [String]) -> [String] {
        var seen = Set(a)
        return a + b.filter { seen.insert($0).inserted }
    }

    func description(ofCode code: String) -> String? {
        violations.first { $0.code == code }?.description
    }
}
