import TidewayJSON

/// An agency of the O-FISH sample data. `key` is the agency's original `name`: it is the
/// immutable partition key (`agency=<key>`), while `name` is the renamable display name.
public struct DemoAgency: Sendable, Equatable {
    public var id: String
    public var key: String
    public var name: String
    public var description: String
    public var email: String
    public var site: String
    public var active: Bool

    public init(id: String, key: String, name: String, description: String, email: String, site: String, active: Bool) {
        self.id = id
        self.key = key
        self.name = name
        self.description = description
        self.email = email
        self.site = site
        self.active = active
    }
}

/// An agency's pick lists for the patrol apps (the `menuData` collection).
/// `violationCodes` and `violationDescriptions` are parallel lists.
public struct MenuLists: Sendable, Equatable {
    public var countryPickerPriorityList: [String]
    public var ports: [String]
    public var fisheries: [String]
    public var species: [String]
    public var emsTypes: [String]
    public var activities: [String]
    public var gear: [String]
    public var violationCodes: [String]
    public var violationDescriptions: [String]

    public init(
        countryPickerPriorityList: [String], ports: [String], fisheries: [String], species: [String], emsTypes: [String],
        activities: [String], gear: [String], violationCodes: [String], violationDescriptions: [String]
    ) {
        self.countryPickerPriorityList = countryPickerPriorityList
        self.ports = ports
        self.fisheries = fisheries
        self.species = species
        self.emsTypes = emsTypes
        self.activities = activities
        self.gear = gear
        self.violationCodes = violationCodes
        self.violationDescriptions = violationDescriptions
    }

    /// The `menuData` document for these lists.
    public func document(id: String) -> JSON {
        func list(_ items: [String]) -> JSON { .array(items.map(JSON.string)) }
        return [
            "_id": .string(id),
            "countryPickerPriorityList": list(countryPickerPriorityList),
            "ports": list(ports),
            "fisheries": list(fisheries),
            "species": list(species),
            "emsTypes": list(emsTypes),
            "activities": list(activities),
            "gear": list(gear),
            "violationCodes": list(violationCodes),
            "violationDescriptions": list(violationDescriptions),
        ]
    }
}

/// A marine protected area in the shape of the `mpas` collection; `coordinates` is a
/// closed ring of `[lon, lat]` pairs (the first point repeated at the end).
public struct DemoMPA: Sendable, Equatable {
    public var id: String
    public var agencyKey: String
    public var name: String
    public var country: String
    public var description: String
    public var hexColor: String
    public var coordinates: [[Double]]

    public var document: JSON {
        [
            "_id": .string(id),
            "name": .string(name),
            "country": .string(country),
            "description": .string(description),
            "hexColor": .string(hexColor),
            "coordinates": .array(coordinates.map { .array($0.map(JSON.double)) }),
        ]
    }
}
