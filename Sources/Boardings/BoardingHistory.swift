import Database
import TidewayJSON

/// The report's history timeline (server effect 7, app.report_history, written by a trigger
/// on every report write). The table comes with its own migration; until it exists the
/// page says that history is not recorded here, rather than showing anything made up.
enum BoardingHistory {
    struct Entry {
        let at: String
        let who: String
        let device: String
        let action: String
        let changes: [String]
        let hasChanges: Bool
    }

    /// Whether the history table exists in this database.
    static let existsQuery: SQL = "select to_regclass('app.report_history') is not null as present"

    /// Newest first; row-level security of the history table limits it like the report.
    static func query(reportID: String) -> SQL {
        """
        select to_char(h.at at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS') as at, h.op, h.device, h.version,
               h.change::text as change, coalesce(nullif(c.doc ->> 'displayName', ''), c.doc ->> 'userName', '') as who
          from app.report_history h
          left join sync.chatsters c on c.id = h.user_id::text and not c.deleted
         where h.report_id = \(reportID)
         order by h.id desc limit 200
        """
    }

    static func entries(_ rows: [Row]) -> [Entry] {
        rows.map { row in
            let op = row["op"] ?? ""
            let change = row["change"].flatMap { try? JSON(parsing: $0) }
            let device = row["device"] ?? ""
            let lines: [String] = op == "update" ? describe(change ?? .null, at: []) : []
            return Entry(
                at: (row["at"] ?? "") + " UTC",
                who: (row["who"] ?? "").isEmpty ? "the server" : row["who"]!,
                device: device == "web" ? "the web back office" : device == "migration" ? "the history's start" : "device \(device)",
                action: op == "insert" ? "Created (version \(row["version"] ?? "1"))"
                    : op == "delete" ? "Deleted" : "Changed (version \(row["version"] ?? ""))",
                changes: lines, hasChanges: !lines.isEmpty)
        }
    }

    /// A merge patch as readable lines: `Vessel › Name: “Gaviota”`, `Notes: removed`.
    static func describe(_ patch: JSON, at path: [String]) -> [String] {
        if case .object(let fields) = patch, !path.isEmpty || !fields.isEmpty {
            return fields.keys.sorted().flatMap { key in describe(fields[key]!, at: path + [key]) }
        }
        let label = path.map(BoardingFieldNames.label).joined(separator: " › ")
        switch patch {
        case .null: return ["\(label): removed"]
        case .array(let items): return ["\(label): \(items.count) \(items.count == 1 ? "entry" : "entries") — \(summary(patch))"]
        default: return ["\(label): \(summary(patch))"]
        }
    }

    /// A value in a line of text, shortened.
    static func summary(_ value: JSON) -> String {
        let text: String
        switch value {
        case .string(let s): text = "“\(s)”"
        case .array(let items): text = items.map(summary).joined(separator: "; ")
        case .object(let fields):
            text = fields.keys.sorted().compactMap { key in
                if case .object = fields[key]! { return nil }
                return "\(BoardingFieldNames.label(key)) \(summary(fields[key]!))"
            }.joined(separator: ", ")
        default: text = value.serialized()
        }
        return text.count > 240 ? String(text.prefix(239)) + "…" : text
    }
}

/// Labels for document keys in history lines and conflict panels.
enum BoardingFieldNames {
    static let labels: [String: String] = [
        "draft": "Draft", "date": "Boarded", "timestamp": "Filed", "location": "Position", "reportingOfficer": "Officer",
        "vessel": "Vessel", "name": "Name", "homePort": "Home port", "nationality": "Nationality",
        "permitNumber": "Permit number", "ems": "EMS", "emsType": "Type", "emsDescription": "Description",
        "registryNumber": "Registry number", "lastDelivery": "Last delivery", "business": "Business",
        "captain": "Captain", "crew": "Crew", "license": "License", "notes": "Notes", "note": "Note",
        "inspection": "Inspection", "activity": "Activity", "fishery": "Fishery", "gearType": "Gear type",
        "actualCatch": "Catch", "fish": "Species", "number": "Number", "weight": "Weight", "unit": "Unit",
        "summary": "Summary", "safetyLevel": "Safety level", "level": "Level", "amberReason": "Amber reason",
        "violations": "Violations", "disposition": "Disposition", "offence": "Offence", "code": "Code",
        "explanation": "Explanation", "crewMember": "Crew member", "seizures": "Seizures", "text": "Text",
        "attachments": "Attachments", "photoIDs": "Photos", "first": "First name", "last": "Last name", "email": "Email",
    ]

    static func label(_ key: String) -> String {
        if let index = Int(key) { return "#\(index + 1)" }
        return labels[key] ?? key
    }
}
