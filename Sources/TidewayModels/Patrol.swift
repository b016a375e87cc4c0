/// The Patrol collections of docs/domain.md (partition `agency=<key>`), after O-FISH.
/// Optional fields are left out of the JSON when nil; the server rejects unknown fields.

public struct Report: Codable, Sendable, Hashable {
    public var _id: String
    public var draft: Bool?
    public var timestamp: String
    public var date: String?
    /// `[lon, lat]`
    public var location: [Double]?
    public var reportingOfficer: Officer?
    public var vessel: Boat?
    public var captain: CrewMember?
    public var crew: [CrewMember]?
    public var notes: [AnnotatedNote]?
    public var inspection: Inspection?

    public init(_id: String, draft: Bool? = nil, timestamp: String, date: String? = nil, location: [Double]? = nil,
                reportingOfficer: Officer? = nil, vessel: Boat? = nil, captain: CrewMember? = nil,
                crew: [CrewMember]? = nil, notes: [AnnotatedNote]? = nil, inspection: Inspection? = nil) {
        self._id = _id
        self.draft = draft
        self.timestamp = timestamp
        self.date = date
        self.location = location
        self.reportingOfficer = reportingOfficer
        self.vessel = vessel
        self.captain = captain
        self.crew = crew
        self.notes = notes
        self.inspection = inspection
    }
}

public struct PersonName: Codable, Sendable, Hashable {
    public var first: String
    public var last: String
    public init(first: String, last: String) { self.first = first; self.last = last }
}

/// `User` in the domain's Report tree: the reporting officer.
public struct Officer: Codable, Sendable, Hashable {
    public var name: PersonName?
    public var email: String
    public init(name: PersonName? = nil, email: String) { self.name = name; self.email = email }
}

public struct Attachments: Codable, Sendable, Hashable {
    public var notes: [String]?
    public var photoIDs: [String]?
    public init(notes: [String]? = nil, photoIDs: [String]? = nil) { self.notes = notes; self.photoIDs = photoIDs }
}

public struct Boat: Codable, Sendable, Hashable {
    public var name: String
    public var homePort: String
    public var nationality: String
    public var permitNumber: String
    public var ems: [EMS]?
    public var lastDelivery: Delivery?
    public var attachments: Attachments?
    public init(name: String, homePort: String, nationality: String, permitNumber: String, ems: [EMS]? = nil,
                lastDelivery: Delivery? = nil, attachments: Attachments? = nil) {
        self.name = name
        self.homePort = homePort
        self.nationality = nationality
        self.permitNumber = permitNumber
        self.ems = ems
        self.lastDelivery = lastDelivery
        self.attachments = attachments
    }
}

public struct EMS: Codable, Sendable, Hashable {
    public var emsType: String
    public var emsDescription: String
    public var registryNumber: String
    public var attachments: Attachments?
    public init(emsType: String, emsDescription: String, registryNumber: String, attachments: Attachments? = nil) {
        self.emsType = emsType
        self.emsDescription = emsDescription
        self.registryNumber = registryNumber
        self.attachments = attachments
    }
}

public struct Delivery: Codable, Sendable, Hashable {
    public var date: String
    public var location: String
    public var business: String
    public var attachments: Attachments?
    public init(date: String, location: String, business: String, attachments: Attachments? = nil) {
        self.date = date
        self.location = location
        self.business = business
        self.attachments = attachments
    }
}

public struct CrewMember: Codable, Sendable, Hashable {
    public var name: String
    public var license: String
    public var attachments: Attachments?
    public init(name: String, license: String, attachments: Attachments? = nil) {
        self.name = name
        self.license = license
        self.attachments = attachments
    }
}

public struct AnnotatedNote: Codable, Sendable, Hashable {
    public var note: String
    public var photoIDs: [String]?
    public init(note: String, photoIDs: [String]? = nil) { self.note = note; self.photoIDs = photoIDs }
}

/// Activity, fishery and gear type: a menu choice with its evidence.
public struct NamedChoice: Codable, Sendable, Hashable {
    public var name: String
    public var attachments: Attachments?
    public init(name: String, attachments: Attachments? = nil) { self.name = name; self.attachments = attachments }
}

public struct Inspection: Codable, Sendable, Hashable {
    public var activity: NamedChoice?
    public var fishery: NamedChoice?
    public var gearType: NamedChoice?
    public var actualCatch: [Catch]?
    public var summary: Summary?
    public var attachments: Attachments?
    public init(activity: NamedChoice? = nil, fishery: NamedChoice? = nil, gearType: NamedChoice? = nil,
                actualCatch: [Catch]? = nil, summary: Summary? = nil, attachments: Attachments? = nil) {
        self.activity = activity
        self.fishery = fishery
        self.gearType = gearType
        self.actualCatch = actualCatch
        self.summary = summary
        self.attachments = attachments
    }
}

public struct Catch: Codable, Sendable, Hashable {
    public var fish: String
    public var number: Int
    public var weight: Double
    public var unit: String
    public var attachments: Attachments?
    public init(fish: String, number: Int, weight: Double, unit: String, attachments: Attachments? = nil) {
        self.fish = fish
        self.number = number
        self.weight = weight
        self.unit = unit
        self.attachments = attachments
    }
}

public struct Summary: Codable, Sendable, Hashable {
    public var safetyLevel: SafetyLevel?
    public var violations: [Violation]?
    public var seizures: Seizures?
    public init(safetyLevel: SafetyLevel? = nil, violations: [Violation]? = nil, seizures: Seizures? = nil) {
        self.safetyLevel = safetyLevel
        self.violations = violations
        self.seizures = seizures
    }
}

public struct SafetyLevel: Codable, Sendable, Hashable {
    /// `Red`, `Amber` or `Green`
    public var level: String
    public var amberReason: String
    public var attachments: Attachments?
    public init(level: String, amberReason: String, attachments: Attachments? = nil) {
        self.level = level
        self.amberReason = amberReason
        self.attachments = attachments
    }
}

public struct Seizures: Codable, Sendable, Hashable {
    public var text: String
    public var attachments: Attachments?
    public init(text: String, attachments: Attachments? = nil) { self.text = text; self.attachments = attachments }
}

public struct Offence: Codable, Sendable, Hashable {
    public var code: String
    public var explanation: String
    public init(code: String, explanation: String) { self.code = code; self.explanation = explanation }
}

public struct Violation: Codable, Sendable, Hashable {
    /// `""`, `Warning` or `Citation`
    public var disposition: String
    public var offence: Offence
    public var crewMember: CrewMember?
    public var attachments: Attachments?
    public init(disposition: String, offence: Offence, crewMember: CrewMember? = nil, attachments: Attachments? = nil) {
        self.disposition = disposition
        self.offence = offence
        self.crewMember = crewMember
        self.attachments = attachments
    }
}

/// `photos`: the full picture lives in the blob store (`pictureURL`); the thumbnail stays.
public struct Photo: Codable, Sendable, Hashable {
    public var _id: String
    public var thumbNail: String?
    public var picture: String?
    public var pictureURL: String?
    public var referencingReportID: String?
    public var date: String
    public init(_id: String, thumbNail: String? = nil, picture: String? = nil, pictureURL: String? = nil,
                referencingReportID: String? = nil, date: String) {
        self._id = _id
        self.thumbNail = thumbNail
        self.picture = picture
        self.pictureURL = pictureURL
        self.referencingReportID = referencingReportID
        self.date = date
    }
}

public struct DutyUser: Codable, Sendable, Hashable {
    public var name: PersonName?
    public var email: String?
    public init(name: PersonName? = nil, email: String? = nil) { self.name = name; self.email = email }
}

/// `dutyChanges`: `status` is `On Duty` or `Off Duty`.
public struct DutyChange: Codable, Sendable, Hashable {
    public var _id: String
    public var user: DutyUser
    public var date: String
    public var status: String
    public init(_id: String, user: DutyUser, date: String, status: String) {
        self._id = _id
        self.user = user
        self.date = date
        self.status = status
    }
}

/// `menuData`: one per agency, written by admins.
public struct MenuData: Codable, Sendable, Hashable {
    public var _id: String
    public var countryPickerPriorityList: [String]?
    public var ports: [String]?
    public var fisheries: [String]?
    public var species: [String]?
    public var emsTypes: [String]?
    public var activities: [String]?
    public var gear: [String]?
    public var violationCodes: [String]?
    public var violationDescriptions: [String]?
}

/// `mpas`: a marine protected area, a closed ring of `[lon, lat]`.
public struct ProtectedArea: Codable, Sendable, Hashable {
    public var _id: String
    public var name: String
    public var country: String?
    public var description: String?
    public var hexColor: String?
    public var coordinates: [[Double]]
}
