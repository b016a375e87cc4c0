@testable import TidewayJSON

/// The `reports` shape of docs/domain.md, written out independently of the generator:
/// which fields exist, which are required (`*`), and what each holds.
indirect enum Shape: Sendable {
    case string, bool, int, number, date, lonLat
    case oneOf(Set<String>)
    case array(Shape)
    case object([String: (required: Bool, shape: Shape)])

    /// Problems found in `value`, as paths with a reason; empty when it conforms.
    func problems(_ value: JSON, at path: String = "report") -> [String] {
        switch (self, value) {
        case (.string, .string), (.bool, .bool), (.int, .int), (.number, .int), (.number, .double):
            return []
        case (.date, .string(let text)):
            return text.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/) == nil ? ["\(path): not an ISO 8601 UTC date: \(text)"] : []
        case (.lonLat, .array(let pair)):
            guard pair.count == 2, let lon = pair[0].doubleValue, let lat = pair[1].doubleValue,
                (-180...180).contains(lon), (-90...90).contains(lat)
            else { return ["\(path): not [lon, lat]"] }
            return []
        case (.oneOf(let allowed), .string(let text)):
            return allowed.contains(text) ? [] : ["\(path): \"\(text)\" not one of \(allowed.sorted())"]
        case (.array(let element), .array(let items)):
            return items.enumerated().flatMap { element.problems($1, at: "\(path)[\($0)]") }
        case (.object(let fields), .object(let object)):
            let unknown = object.keys.filter { fields[$0] == nil }.map { "\(path).\($0): unknown field" }
            let missing = fields.filter { $0.value.required && object[$0.key] == nil }.map { "\(path).\($0.key): missing" }
            let wrong = object.flatMap { key, value in fields[key].map { $0.shape.problems(value, at: "\(path).\(key)") } ?? [] }
            return unknown + missing + wrong
        default:
            return ["\(path): unexpected \(value.typeName)"]
        }
    }

    static func fields(_ fields: [String: (Bool, Shape)]) -> Shape {
        .object(fields.mapValues { (required: $0.0, shape: $0.1) })
    }

    static let attachments = fields(["notes": (false, .array(.string)), "photoIDs": (false, .array(.string))])
    static let user = fields(["name": (true, fields(["first": (true, .string), "last": (true, .string)])), "email": (true, .string)])
    static let crewMember = fields(["name": (true, .string), "license": (true, .string), "attachments": (false, attachments)])
    static let named = fields(["name": (true, .string), "attachments": (false, attachments)])

    static let report = fields([
        "_id": (true, .string), "draft": (false, .bool), "timestamp": (true, .date), "date": (false, .date),
        "location": (false, .lonLat), "reportingOfficer": (false, user),
        "vessel": (false, fields([
            "name": (true, .string), "homePort": (true, .string), "nationality": (true, .string), "permitNumber": (true, .string),
            "ems": (false, .array(fields([
                "emsType": (true, .string), "emsDescription": (true, .string), "registryNumber": (true, .string),
                "attachments": (false, attachments),
            ]))),
            "lastDelivery": (false, fields([
                "date": (true, .date), "location": (true, .string), "business": (true, .string), "attachments": (false, attachments),
            ])),
            "attachments": (false, attachments),
        ])),
        "captain": (false, crewMember), "crew": (false, .array(crewMember)),
        "notes": (false, .array(fields(["note": (true, .string), "photoIDs": (false, .array(.string))]))),
        "inspection": (false, fields([
            "activity": (false, named), "fishery": (false, named), "gearType": (false, named),
            "actualCatch": (false, .array(fields([
                "fish": (true, .string), "number": (true, .int), "weight": (true, .number), "unit": (true, .string),
                "attachments": (false, attachments),
            ]))),
            "summary": (false, fields([
                "safetyLevel": (false, fields([
                    "level": (true, .oneOf(["Red", "Amber", "Green"])), "amberReason": (true, .string), "attachments": (false, attachments),
                ])),
                "violations": (false, .array(fields([
                    "disposition": (true, .oneOf(["", "Warning", "Citation"])),
                    "offence": (false, fields(["code": (true, .string), "explanation": (true, .string)])),
                    "crewMember": (false, crewMember), "attachments": (false, attachments),
                ]))),
                "seizures": (false, fields(["text": (true, .string), "attachments": (false, attachments)])),
            ])),
            "attachments": (false, attachments),
        ])),
    ])
}
