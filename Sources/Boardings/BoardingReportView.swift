import TidewayJSON

/// A boarding report as sections of labelled values and tables, for the report page and
/// its print view. Every value is plain text (the templates escape it); only the map is
/// markup, drawn by the server from numbers.
struct BoardingReportView {
    struct Pair {
        let label: String
        let value: String
    }

    struct TableRow {
        let cells: [String]
    }

    struct Table {
        let headers: [String]
        let rows: [TableRow]
    }

    struct Section {
        let id: String
        let title: String
        let pairs: [Pair]
        let table: Table?
        let empty: String?
        let hasPairs: Bool

        init(_ id: String, _ title: String, pairs: [Pair] = [], table: Table? = nil, empty: String? = nil) {
            self.id = id
            self.title = title
            self.pairs = pairs
            self.table = table
            // A section with nothing to show says so instead of disappearing.
            self.empty = pairs.isEmpty && (table?.rows.isEmpty ?? true) ? (empty ?? "Not recorded.") : nil
            self.hasPairs = !pairs.isEmpty
        }
    }

    let sections: [Section]

    init(doc: JSON, agency: String) {
        func text(_ value: JSON?) -> String {
            switch value {
            case .string(let s)?: s
            case .int(let i)?: String(i)
            case .double(let d)?: d.rounded() == d && abs(d) < 1e15 ? String(Int64(d)) : String(d)
            case .bool(let b)?: b ? "yes" : "no"
            default: ""
            }
        }
        func pairs(_ list: [(String, JSON?)]) -> [Pair] {
            list.compactMap { label, value in
                let shown = text(value)
                return shown.isEmpty ? nil : Pair(label: label, value: shown)
            }
        }
        func items(_ value: JSON?) -> [JSON] { value?.arrayValue ?? [] }
        func table(_ headers: [String], _ rows: [[String]]) -> Table {
            Table(headers: headers, rows: rows.map { TableRow(cells: $0) })
        }
        func noteList(_ attachments: JSON?) -> String {
            items(attachments?["notes"]).compactMap(\.stringValue).joined(separator: "; ")
        }

        let vessel = doc["vessel"]
        let inspection = doc["inspection"]
        let summary = inspection?["summary"]
        let officer = doc["reportingOfficer"]
        let officerName = [text(officer?["name"]?["first"]), text(officer?["name"]?["last"])].filter { !$0.isEmpty }.joined(separator: " ")
        var location = ""
        if let point = doc["location"]?.arrayValue, point.count == 2, let lon = point[0].doubleValue, let lat = point[1].doubleValue {
            location = BoardingMap.describe(lon: lon, lat: lat)
        }
        var sections: [Section] = []
        sections.append(Section("boarding", "Boarding", pairs: [
            Pair(label: "Agency", value: agency),
            Pair(label: "Boarded", value: BoardingDates.readable(text(doc["date"]))),
            Pair(label: "Filed", value: BoardingDates.readable(text(doc["timestamp"]))),
            Pair(label: "Status", value: doc["draft"]?.boolValue == true ? "Draft" : "Filed"),
            Pair(label: "Reporting officer", value: [officerName, text(officer?["email"])].filter { !$0.isEmpty }.joined(separator: " · ")),
            Pair(label: "Position", value: location),
        ].filter { !$0.value.isEmpty }))
        sections.append(Section("vessel", "Vessel", pairs: pairs([
            ("Name", vessel?["name"]), ("Permit number", vessel?["permitNumber"]), ("Nationality", vessel?["nationality"]),
            ("Home port", vessel?["homePort"]), ("Notes", .string(noteList(vessel?["attachments"]))),
        ])))
        sections.append(Section("ems", "Electronic monitoring (EMS)", table: table(
            ["Type", "Description", "Registry number"],
            items(vessel?["ems"]).map { [text($0["emsType"]), text($0["emsDescription"]), text($0["registryNumber"])] }),
            empty: "No EMS recorded."))
        let delivery = vessel?["lastDelivery"]
        sections.append(Section("delivery", "Last delivery", pairs: pairs([
            ("Date", .string(BoardingDates.readable(text(delivery?["date"])))), ("Place", delivery?["location"]),
            ("Business", delivery?["business"]),
        ])))
        sections.append(Section("captain", "Captain", pairs: pairs([
            ("Name", doc["captain"]?["name"]), ("License", doc["captain"]?["license"]),
        ])))
        sections.append(Section("crew", "Crew", table: table(
            ["Name", "License"], items(doc["crew"]).map { [text($0["name"]), text($0["license"])] }),
            empty: "No crew listed."))
        sections.append(Section("activity", "Activity, fishery and gear", pairs: pairs([
            ("Activity", inspection?["activity"]?["name"]), ("Fishery", inspection?["fishery"]?["name"]),
            ("Gear type", inspection?["gearType"]?["name"]),
        ])))
        sections.append(Section("catch", "Catch", table: table(
            ["Species", "Number", "Weight", "Unit"],
            items(inspection?["actualCatch"]).map { [text($0["fish"]), text($0["number"]), text($0["weight"]), text($0["unit"])] }),
            empty: "No catch recorded."))
        let safety = summary?["safetyLevel"]
        sections.append(Section("safety", "Safety level", pairs: pairs([
            ("Level", safety?["level"]), ("Amber reason", safety?["amberReason"]),
        ])))
        sections.append(Section("violations", "Violations", table: table(
            ["Disposition", "Code", "Explanation", "Crew member"],
            items(summary?["violations"]).map { violation in
                let disposition = text(violation["disposition"])
                return [disposition.isEmpty ? "Noted (no action)" : disposition, text(violation["offence"]?["code"]),
                        text(violation["offence"]?["explanation"]), text(violation["crewMember"]?["name"])]
            }),
            empty: "No violations found."))
        sections.append(Section("seizures", "Seizures", pairs: pairs([("Seized", summary?["seizures"]?["text"])]),
                                empty: "Nothing seized."))
        sections.append(Section("notes", "Notes", table: table(["Note"], items(doc["notes"]).map { [text($0["note"])] }),
                                empty: "No notes."))
        self.sections = sections
    }
}

/// Dates as stored (zoned ISO 8601) shown as `2024-05-01 10:30 UTC`.
enum BoardingDates {
    static func readable(_ iso: String) -> String {
        guard iso.count >= 16, iso.dropFirst(10).first == "T" else { return iso }
        let day = iso.prefix(10)
        let time = iso.dropFirst(11).prefix(5)
        let zone = iso.hasSuffix("Z") ? "UTC" : String(iso.suffix(6))
        return "\(day) \(time) \(zone)"
    }
}
