/// Patrol collections (domain.md, partition `agency=<key>`). Each type mirrors a block of the
/// domain's Report tree; `*` there is `.required` here.
enum PatrolSchemas {
    static let all = [reports, photos, dutyChanges, menuData, mpas]

    // MARK: reports

    static let reports = CollectionSchema(
        name: "reports",
        fields: [
            "draft": .optional(.bool),
            "timestamp": .required(.date),
            "date": .optional(.date),
            "location": .optional(.lonLat),
            "reportingOfficer": .optional(officer),
            "vessel": .optional(boat),
            "captain": .optional(crewMember),
            "crew": .optional(.array(crewMember)),
            "notes": .optional(.array(annotatedNote)),
            "inspection": .optional(inspection),
        ])

    static let attachments: Schema = .object([
        "notes": .optional(.array(.string)),
        "photoIDs": .optional(.array(.string)),
    ])

    static let officer: Schema = .object([
        "name": .optional(.object(["first": .required(.string), "last": .required(.string)])),
        "email": .required(.string),
    ])

    static let boat: Schema = .object([
        "name": .required(.string),
        "homePort": .required(.string),
        "nationality": .required(.string),
        "permitNumber": .required(.string),
        "ems": .optional(.array(ems)),
        "lastDelivery": .optional(delivery),
        "attachments": .optional(attachments),
    ])

    static let ems: Schema = .object([
        "emsType": .required(.string),
        "emsDescription": .required(.string),
        "registryNumber": .required(.string),
        "attachments": .optional(attachments),
    ])

    /// `location` is the place of business (a port), not coordinates, as in O-FISH.
    static let delivery: Schema = .object([
        "date": .required(.date),
        "location": .required(.string),
        "business": .required(.string),
        "attachments": .optional(attachments),
    ])

    static let crewMember: Schema = .object([
        "name": .required(.string),
        "license": .required(.string),
        "attachments": .optional(attachments),
    ])

    static let annotatedNote: Schema = .object([
        "note": .required(.string),
        "photoIDs": .optional(.array(.string)),
    ])

    /// Activity, fishery and gear type: a menu choice with its evidence.
    static let namedChoice: Schema = .object([
        "name": .required(.string),
        "attachments": .optional(attachments),
    ])

    static let inspection: Schema = .object([
        "activity": .optional(namedChoice),
        "fishery": .optional(namedChoice),
        "gearType": .optional(namedChoice),
        "actualCatch": .optional(.array(fishCatch)),
        "summary": .optional(summary),
        "attachments": .optional(attachments),
    ])

    static let fishCatch: Schema = .object([
        "fish": .required(.string),
        "number": .required(.nonNegativeInt),
        "weight": .required(.number),
        "unit": .required(.string),
        "attachments": .optional(attachments),
    ])

    static let summary: Schema = .object([
        "safetyLevel": .optional(safetyLevel),
        "violations": .optional(.array(violation)),
        "seizures": .optional(.object(["text": .required(.string), "attachments": .optional(attachments)])),
    ])

    /// `amberReason` is required but the original apps write "" unless the level is Amber;
    /// `.string` accepts that, and no rule ties it to the level, so their data imports unchanged.
    static let safetyLevel: Schema = .object([
        "level": .required(.oneOf(["Red", "Amber", "Green"])),
        "amberReason": .required(.string),
        "attachments": .optional(attachments),
    ])

    /// Disposition "" is a finding without consequence; only Warning and Citation count as violations.
    static let violation: Schema = .object([
        "disposition": .required(.oneOf(["", "Warning", "Citation"])),
        "offence": .optional(.object(["code": .required(.string), "explanation": .required(.string)])),
        "crewMember": .optional(crewMember),
        "attachments": .optional(attachments),
    ])

    // MARK: photos, dutyChanges

    /// `picture` is transient: the server moves it to the blob store and sets `pictureURL`. Its size
    /// is bounded by the 1 MiB document limit, not here.
    static let photos = CollectionSchema(
        name: "photos",
        fields: [
            "thumbNail": .optional(.base64(maxBytes: 64 * 1024)),
            "picture": .optional(.base64(maxBytes: nil)),
            "pictureURL": .optional(.string),
            "referencingReportID": .optional(.string),
            "date": .required(.date),
        ])

    /// One mobile app writes At Sea / On Land; patrol hours are computed on On Duty / Off Duty only.
    static let dutyChanges = CollectionSchema(
        name: "dutyChanges",
        fields: [
            "user": .required(.object([
                "name": .optional(.object(["first": .optional(.string), "last": .optional(.string)])),
                "email": .optional(.string),
            ])),
            "date": .required(.date),
            "status": .required(.normalizedOneOf([
                "On Duty": "On Duty", "Off Duty": "Off Duty", "At Sea": "On Duty", "On Land": "Off Duty",
            ])),
        ])

    // MARK: menuData, mpas

    static let menuLists = [
        "countryPickerPriorityList", "ports", "fisheries", "species", "emsTypes", "activities", "gear",
        "violationCodes", "violationDescriptions",
    ]

    /// Codes and descriptions are parallel lists: the n-th description explains the n-th code.
    static let menuData = CollectionSchema(
        name: "menuData",
        fields: Dictionary(uniqueKeysWithValues: menuLists.map { ($0, Schema.Field.optional(.array(.string))) }),
        rules: [
            { document in
                let codes = document["violationCodes"]?.arrayValue?.count ?? 0
                let descriptions = document["violationDescriptions"]?.arrayValue?.count ?? 0
                guard codes != descriptions else { return nil }
                return SchemaViolation(
                    path: "/violationDescriptions",
                    message: "expected as many entries as violationCodes (\(codes)), got \(descriptions)")
            }
        ])

    static let mpas = CollectionSchema(
        name: "mpas",
        fields: [
            "name": .required(.string),
            "country": .optional(.string),
            "description": .optional(.string),
            "hexColor": .optional(.hexColor),
            "coordinates": .required(.ring),
        ])
}
