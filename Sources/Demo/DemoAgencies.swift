import Foundation
import TidewayJSON

/// The O-FISH sample agencies, their menu lists and MPAs, read from `Data/ofish/`.
public struct DemoAgencies: Sendable {
    public struct LoadError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The agency whose menu lists serve agencies that have none of their own.
    public static let menuFallbackAgencyKey = "WildAid"

    public let agencies: [DemoAgency]
    private let menus: [String: (id: String, lists: MenuLists)]
    private let allMPAs: [DemoMPA]

    /// `dataDirectory` is the folder holding `agencies.jsonl`, `menu-data.jsonl` and `mpas.jsonl`.
    public init(dataDirectory: URL) throws {
        agencies = try Self.lines(dataDirectory, "agencies.jsonl").map { try Self.agency($0) }
        var menus: [String: (id: String, lists: MenuLists)] = [:]
        for line in try Self.lines(dataDirectory, "menu-data.jsonl") {
            menus[try line.text("agency")] = (try line.text("_id"), try Self.menu(line))
        }
        guard menus[Self.menuFallbackAgencyKey] != nil else {
            throw LoadError(description: "menu-data.jsonl has no lists for \(Self.menuFallbackAgencyKey)")
        }
        self.menus = menus
        allMPAs = try Self.lines(dataDirectory, "mpas.jsonl").flatMap { [agencies] in try Self.mpas($0, agencies: agencies) }
    }

    public func agency(key: String) -> DemoAgency? {
        agencies.first { $0.key == key }
    }

    public func menu(for agencyKey: String) -> MenuLists {
        (menus[agencyKey] ?? menus[Self.menuFallbackAgencyKey]!).lists
    }

    /// The agency's `menuData` document: the sample's own `_id` where it has lists, else
    /// an id derived from the key, so that seeding twice writes the same document.
    public func menuDataDocument(for agencyKey: String) -> JSON {
        let id = menus[agencyKey]?.id ?? Self.derivedID("menuData/\(agencyKey)")
        return menu(for: agencyKey).document(id: id)
    }

    public func mpas(for agencyKey: String) -> [DemoMPA] {
        allMPAs.filter { $0.agencyKey == agencyKey }
    }

    // MARK: - Reading the sample files

    private static func lines(_ directory: URL, _ file: String) throws -> [JSON] {
        let url = directory.appendingPathComponent(file)
        let text = try String(contentsOf: url, encoding: .utf8)
        return try text.split(whereSeparator: \.isNewline).enumerated().map { number, line in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
            let json = try JSON(foundationObject: object)
            guard json.objectValue != nil else { throw LoadError(description: "\(file):\(number + 1): not an object") }
            return json
        }
    }

    private static func agency(_ line: JSON) throws -> DemoAgency {
        let name = try line.text("name")
        return DemoAgency(
            id: try line.text("_id"), key: name, name: name, description: line["description"]?.stringValue ?? "",
            email: line["email"]?.stringValue ?? "", site: line["site"]?.stringValue ?? "",
            active: line["active"]?.boolValue ?? true)
    }

    private static func menu(_ line: JSON) throws -> MenuLists {
        let menu = MenuLists(
            countryPickerPriorityList: try line.texts("countryPickerPriorityList"), ports: try line.texts("ports"),
            fisheries: try line.texts("fisheries"), species: try line.texts("species"), emsTypes: try line.texts("emsTypes"),
            activities: try line.texts("activities"), gear: try line.texts("gear"),
            violationCodes: try line.texts("violationCodes"), violationDescriptions: try line.texts("violationDescriptions"))
        guard menu.violationCodes.count == menu.violationDescriptions.count else {
            throw LoadError(description: "violation codes and descriptions differ in length")
        }
        return menu
    }

    /// One sample MPA becomes one document per agency whose patrol waters hold it. The
    /// sample files every MPA under WildAid; we go by the coordinates instead, so the
    /// Galápagos reserve goes to both Galápagos agencies (each patrols it and edits its
    /// own copy, hence an id per agency) and Cocos Island stays with WildAid. An MPA in
    /// nobody's waters keeps the agency the sample names.
    private static func mpas(_ line: JSON, agencies: [DemoAgency]) throws -> [DemoMPA] {
        let name = try line.text("name")
        var ring: [[Double]] = try (line["coordinates"]?.arrayValue ?? []).map { point in
            guard let lon = point["lon"]?.doubleValue, let lat = point["lat"]?.doubleValue else {
                throw LoadError(description: "MPA \(name): a point without lon/lat")
            }
            return [lon, lat]
        }
        guard ring.count >= 3 else { throw LoadError(description: "MPA \(name): fewer than 3 points") }
        if ring.first != ring.last { ring.append(ring[0]) }

        let open = ring.dropLast()
        let centreLon = open.map { $0[0] }.reduce(0, +) / Double(open.count)
        let centreLat = open.map { $0[1] }.reduce(0, +) / Double(open.count)
        var owners = agencies.map(\.key).filter { key in
            let area = PatrolArea.demo(forAgencyKey: key)
            return area.lon.contains(centreLon) && area.lat.contains(centreLat)
        }
        if owners.isEmpty { owners = [try line.text("agency")] }

        let text = line["text"]?.stringValue ?? ""
        let info = line["info"]?.stringValue ?? ""
        let description = [text, info].filter { !$0.isEmpty }.map { $0.hasSuffix(".") ? $0 : $0 + "." }.joined(separator: " ")
        return owners.map { key in
            DemoMPA(
                id: derivedID("mpas/\(key)/\(name)"), agencyKey: key, name: name, country: line["country"]?.stringValue ?? "",
                description: description, hexColor: line["hexColor"]?.stringValue ?? "", coordinates: ring)
        }
    }

    /// A stable 24-hex-digit id for documents the sample has no id for.
    static func derivedID(_ name: String) -> String {
        var random = DemoRandom(seed: 0, stream: name)
        return DemoRandom.hex(random.next() >> 32, digits: 8) + DemoRandom.hex(random.next(), digits: 16)
    }
}

extension JSON {
    fileprivate func text(_ key: String) throws -> String {
        guard let value = self[key]?.stringValue else { throw DemoAgencies.LoadError(description: "missing string \"\(key)\"") }
        return value
    }

    fileprivate func texts(_ key: String) throws -> [String] {
        guard let values = self[key]?.arrayValue?.compactMap(\.stringValue), values.count == self[key]?.arrayValue?.count else {
            throw DemoAgencies.LoadError(description: "missing list of strings \"\(key)\"")
        }
        return values
    }
}
