import Foundation
import Schema
import TidewayJSON

/// The report form's state: the text of every field, keyed by the JSON Pointer of the value
/// it edits (`/vessel/name`, `/crew/2/license`), and for each list which stored element each
/// row came from (so that a row's attachments survive when rows above it are removed).
/// Field names are those pointers, so schema messages land next to their field.
struct BoardingForm {
    enum Kind {
        case text, textarea, number, integer, date, checkbox
        /// A picker: the agency's menu list (by name), or fixed choices.
        case menu(String)
        case choices([(value: String, label: String)])
    }

    struct FieldSpec {
        let path: String
        let label: String
        let kind: Kind
        var hint: String? = nil
    }

    struct ListSpec {
        let path: String
        let title: String
        let itemName: String
        let fields: [FieldSpec]
    }

    /// A part of the form: fields of one object, or a list of rows.
    enum Part {
        case group(id: String, title: String, fields: [FieldSpec])
        case list(ListSpec)
    }

    static let dateHint = "UTC, e.g. 2024-05-01T10:30:00Z"
    static let dispositions: [(value: String, label: String)] = [("", "Noted, no action"), ("Warning", "Warning"), ("Citation", "Citation")]

    static let parts: [Part] = [
        .group(id: "boarding", title: "Boarding", fields: [
            FieldSpec(path: "/date", label: "Boarded at", kind: .date, hint: dateHint),
            FieldSpec(path: "/timestamp", label: "Filed at", kind: .date, hint: dateHint),
            FieldSpec(path: "/location/1", label: "Latitude", kind: .number, hint: "−90 to 90, south negative"),
            FieldSpec(path: "/location/0", label: "Longitude", kind: .number, hint: "−180 to 180, west negative"),
            FieldSpec(path: "/draft", label: "Draft (not filed yet)", kind: .checkbox),
        ]),
        .group(id: "officer", title: "Reporting officer", fields: [
            FieldSpec(path: "/reportingOfficer/name/first", label: "First name", kind: .text),
            FieldSpec(path: "/reportingOfficer/name/last", label: "Last name", kind: .text),
            FieldSpec(path: "/reportingOfficer/email", label: "Email", kind: .text),
        ]),
        .group(id: "vessel", title: "Vessel", fields: [
            FieldSpec(path: "/vessel/name", label: "Vessel name", kind: .text),
            FieldSpec(path: "/vessel/permitNumber", label: "Permit number", kind: .text),
            FieldSpec(path: "/vessel/nationality", label: "Nationality", kind: .menu("countries")),
            FieldSpec(path: "/vessel/homePort", label: "Home port", kind: .menu("ports")),
        ]),
        .list(ListSpec(path: "/vessel/ems", title: "Electronic monitoring (EMS)", itemName: "EMS entry", fields: [
            FieldSpec(path: "emsType", label: "Type", kind: .menu("emsTypes")),
            FieldSpec(path: "emsDescription", label: "Description", kind: .text),
            FieldSpec(path: "registryNumber", label: "Registry number", kind: .text),
        ])),
        .group(id: "delivery", title: "Last delivery", fields: [
            FieldSpec(path: "/vessel/lastDelivery/date", label: "Date", kind: .date, hint: dateHint),
            FieldSpec(path: "/vessel/lastDelivery/location", label: "Place", kind: .menu("ports")),
            FieldSpec(path: "/vessel/lastDelivery/business", label: "Business", kind: .text),
        ]),
        .group(id: "captain", title: "Captain", fields: [
            FieldSpec(path: "/captain/name", label: "Captain's name", kind: .text),
            FieldSpec(path: "/captain/license", label: "Captain's license", kind: .text),
        ]),
        .list(ListSpec(path: "/crew", title: "Crew", itemName: "crew member", fields: [
            FieldSpec(path: "name", label: "Name", kind: .text),
            FieldSpec(path: "license", label: "License", kind: .text),
        ])),
        .group(id: "activity", title: "Activity, fishery and gear", fields: [
            FieldSpec(path: "/inspection/activity/name", label: "Activity", kind: .menu("activities")),
            FieldSpec(path: "/inspection/fishery/name", label: "Fishery", kind: .menu("fisheries")),
            FieldSpec(path: "/inspection/gearType/name", label: "Gear type", kind: .menu("gear")),
        ]),
        .list(ListSpec(path: "/inspection/actualCatch", title: "Catch", itemName: "catch line", fields: [
            FieldSpec(path: "fish", label: "Species", kind: .menu("species")),
            FieldSpec(path: "number", label: "Number", kind: .integer),
            FieldSpec(path: "weight", label: "Weight", kind: .number),
            FieldSpec(path: "unit", label: "Unit", kind: .choices([("kg", "kg"), ("lbs", "lbs")])),
        ])),
        .group(id: "safety", title: "Safety level", fields: [
            FieldSpec(path: "/inspection/summary/safetyLevel/level", label: "Level",
                      kind: .choices([("", "Not assessed"), ("Green", "Green"), ("Amber", "Amber"), ("Red", "Red")])),
            FieldSpec(path: "/inspection/summary/safetyLevel/amberReason", label: "Reason (for Amber)", kind: .text),
        ]),
        .list(ListSpec(path: "/inspection/summary/violations", title: "Violations", itemName: "violation", fields: [
            FieldSpec(path: "disposition", label: "Disposition", kind: .choices(dispositions)),
            FieldSpec(path: "offence/code", label: "Violation code", kind: .menu("violationCodes")),
            FieldSpec(path: "offence/explanation", label: "Explanation", kind: .text, hint: "Left empty: the code's description"),
            FieldSpec(path: "crewMember/name", label: "Crew member (name)", kind: .text),
            FieldSpec(path: "crewMember/license", label: "Crew member (license)", kind: .text),
        ])),
        .group(id: "seizures", title: "Seizures", fields: [
            FieldSpec(path: "/inspection/summary/seizures/text", label: "What was seized", kind: .textarea),
        ]),
        .list(ListSpec(path: "/notes", title: "Notes", itemName: "note", fields: [
            FieldSpec(path: "note", label: "Note", kind: .textarea),
        ])),
    ]

    static var lists: [ListSpec] {
        parts.compactMap { if case .list(let spec) = $0 { return spec } else { return nil } }
    }

    static var groupFields: [FieldSpec] {
        parts.flatMap { part -> [FieldSpec] in if case .group(_, _, let fields) = part { return fields } else { return [] } }
    }

    /// Objects that disappear from the document when every field of theirs is left empty.
    static let optionalObjects = [
        "/vessel/lastDelivery", "/inspection/activity", "/inspection/fishery", "/inspection/gearType",
        "/inspection/summary/safetyLevel", "/inspection/summary/seizures", "/reportingOfficer/name", "/reportingOfficer",
        "/captain", "/vessel", "/inspection/summary", "/inspection",
    ]

    /// Text of each field, by pointer.
    var values: [String: String] = [:]
    /// For each list, the stored element index of each row (nil for a new row).
    var rows: [String: [Int?]] = [:]

    // MARK: from a document, from a posted form

    init(document doc: JSON) {
        for field in Self.groupFields {
            values[field.path] = Self.text(of: doc[JSONPointer(parsing: field.path)!], kind: field.kind)
        }
        for list in Self.lists {
            let items = doc[JSONPointer(parsing: list.path)!]?.arrayValue ?? []
            rows[list.path] = items.indices.map { $0 }
            for (index, item) in items.enumerated() {
                for field in list.fields {
                    values["\(list.path)/\(index)/\(field.path)"] = Self.text(of: item[JSONPointer(parsing: "/" + field.path)!], kind: field.kind)
                }
            }
        }
    }

    /// The form as posted: every field named by a pointer, and each list row's `_from`.
    init(posted form: [String: String]) {
        for field in Self.groupFields { values[field.path] = form[field.path] ?? "" }
        for list in Self.lists {
            // Rows are the indexes that have a `_from` marker, in order.
            let prefix = list.path + "/"
            let indexes = form.keys.compactMap { key -> Int? in
                guard key.hasPrefix(prefix), key.hasSuffix("/_from") else { return nil }
                let middle = key.dropFirst(prefix.count).dropLast("/_from".count)
                guard let index = Int(middle), index >= 0, index < 500 else { return nil }
                return index
            }.sorted()
            var listRows: [Int?] = []
            for index in indexes {
                listRows.append(Int(form["\(list.path)/\(index)/_from"] ?? ""))
                for field in list.fields {
                    values["\(list.path)/\(listRows.count - 1)/\(field.path)"] = form["\(list.path)/\(index)/\(field.path)"] ?? ""
                }
            }
            rows[list.path] = listRows
        }
    }

    static func text(of value: JSON?, kind: Kind) -> String {
        switch value {
        case .string(let s)?: return s
        case .int(let i)?: return String(i)
        case .double(let d)?: return d.rounded() == d && abs(d) < 1e15 ? String(Int64(d)) : String(d)
        case .bool(let b)?: return b ? "on" : ""
        default: return ""
        }
    }

    // MARK: adding and removing rows

    mutating func addRow(to path: String) {
        guard let list = Self.lists.first(where: { $0.path == path }) else { return }
        var listRows = rows[path] ?? []
        guard listRows.count < 200 else { return }
        listRows.append(nil)
        for field in list.fields { values["\(path)/\(listRows.count - 1)/\(field.path)"] = "" }
        rows[path] = listRows
    }

    /// `/crew/1`: removes that row and renumbers the rows after it.
    mutating func removeRow(_ pointer: String) {
        guard let slash = pointer.lastIndex(of: "/"), let index = Int(pointer[pointer.index(after: slash)...]) else { return }
        let path = String(pointer[..<slash])
        guard let list = Self.lists.first(where: { $0.path == path }), var listRows = rows[path], listRows.indices.contains(index)
        else { return }
        for row in index..<listRows.count {
            for field in list.fields {
                values["\(path)/\(row)/\(field.path)"] = row + 1 < listRows.count ? values["\(path)/\(row + 1)/\(field.path)"] : nil
            }
        }
        listRows.remove(at: index)
        rows[path] = listRows
    }

    // MARK: to a document

    /// The document the form describes, built on `base` (the stored document the user
    /// loaded) so that what the form does not show (attachments, unknown future fields)
    /// is kept. A field whose text is what `base` shows keeps `base`'s exact value, so an
    /// untouched field never counts as a change. Problems are returned by pointer.
    func document(base: JSON, menus: BoardingMenus) -> (JSON, [String: String]) {
        var doc = base.objectValue == nil ? JSON.object([:]) : base
        var errors: [String: String] = [:]

        for field in Self.groupFields where !field.path.hasPrefix("/location/") {
            let pointer = JSONPointer(parsing: field.path)!
            let typed = parse(values[field.path] ?? "", field: field, original: base[pointer], path: field.path, errors: &errors)
            doc = doc.setting(pointer, to: typed)
        }
        // O-FISH writes "" unless the level is Amber; the schema requires the key.
        let amber = JSONPointer(parsing: "/inspection/summary/safetyLevel/amberReason")!
        if doc[JSONPointer(parsing: "/inspection/summary/safetyLevel/level")!] != nil, doc[amber] == nil {
            doc = doc.setting(amber, to: "")
        }
        // The position is one [lon, lat] pair: both or neither.
        let lonText = (values["/location/0"] ?? "").trimmingCharacters(in: .whitespaces)
        let latText = (values["/location/1"] ?? "").trimmingCharacters(in: .whitespaces)
        if lonText.isEmpty && latText.isEmpty {
            doc = doc.setting(JSONPointer(["location"]), to: nil)
        } else {
            let original = base["location"]?.arrayValue
            let lon = Self.number(lonText, original: original?.first)
            let lat = Self.number(latText, original: original?.last)
            if lon == nil || !(lon!.doubleValue.map { abs($0) <= 180 } ?? false) { errors["/location/0"] = "Enter a longitude between −180 and 180." }
            if lat == nil || !(lat!.doubleValue.map { abs($0) <= 90 } ?? false) { errors["/location/1"] = "Enter a latitude between −90 and 90." }
            if let lon, let lat { doc = doc.setting(JSONPointer(["location"]), to: .array([lon, lat])) }
        }

        for list in Self.lists {
            let pointer = JSONPointer(parsing: list.path)!
            let originalItems = base[pointer]?.arrayValue ?? []
            var items: [JSON] = []
            for (row, from) in (rows[list.path] ?? []).enumerated() {
                let original = from.flatMap { originalItems.indices.contains($0) ? originalItems[$0] : nil }
                var item = original ?? .object([:])
                var blank = true
                for field in list.fields {
                    let name = "\(list.path)/\(row)/\(field.path)"
                    let text = values[name] ?? ""
                    if !text.trimmingCharacters(in: .whitespaces).isEmpty { blank = blank && field.path == "unit" }
                    let fieldPointer = JSONPointer(parsing: "/" + field.path)!
                    let typed = parse(text, field: field, original: original?[fieldPointer], path: name, errors: &errors)
                    item = item.setting(fieldPointer, to: typed)
                }
                // A new row left empty is dropped rather than refused.
                if original == nil && blank {
                    for field in list.fields { errors["\(list.path)/\(row)/\(field.path)"] = nil }
                    continue
                }
                item = Self.completed(item, list: list.path, row: row, menus: menus, errors: &errors)
                items.append(item)
            }
            if items.isEmpty && base[pointer] == nil {
                doc = doc.setting(pointer, to: nil)
            } else {
                doc = doc.setting(pointer, to: .array(items))
            }
        }
        for path in Self.optionalObjects {
            let pointer = JSONPointer(parsing: path)!
            if let value = doc[pointer], Self.isBlank(value) { doc = doc.setting(pointer, to: nil) }
        }
        return (doc, errors)
    }

    /// What the schema requires of a list element that the form can fill in or must refuse.
    static func completed(_ item: JSON, list: String, row: Int, menus: BoardingMenus, errors: inout [String: String]) -> JSON {
        var item = item
        func require(_ field: String, _ message: String) {
            if (item[JSONPointer(parsing: "/" + field)!]?.stringValue ?? "").isEmpty { errors["\(list)/\(row)/\(field)"] = message }
        }
        switch list {
        case "/crew":
            require("name", "A crew member needs a name.")
            if item["license"] == nil { item = item.setting(JSONPointer(["license"]), to: "") }
        case "/inspection/summary/violations":
            if item["disposition"] == nil { item = item.setting(JSONPointer(["disposition"]), to: "") }
            if let code = item["offence"]?["code"]?.stringValue, !code.isEmpty {
                if (item["offence"]?["explanation"]?.stringValue ?? "").isEmpty {
                    item = item.setting(JSONPointer(["offence", "explanation"]), to: .string(menus.description(ofCode: code) ?? ""))
                }
            } else {
                errors["\(list)/\(row)/offence/code"] = "Choose the violation code."
            }
            if let member = item["crewMember"] {
                if isBlank(member) {
                    item = item.setting(JSONPointer(["crewMember"]), to: nil)
                } else {
                    if member["license"] == nil { item = item.setting(JSONPointer(["crewMember", "license"]), to: "") }
                    require("crewMember/name", "Name the crew member, or leave both crew member fields empty.")
                }
            }
        case "/inspection/actualCatch":
            require("fish", "Choose the species.")
            if item["number"] == nil, errors["\(list)/\(row)/number"] == nil { errors["\(list)/\(row)/number"] = "Enter how many (0 or more)." }
            if item["weight"] == nil, errors["\(list)/\(row)/weight"] == nil { errors["\(list)/\(row)/weight"] = "Enter the weight." }
            if item["unit"] == nil { item = item.setting(JSONPointer(["unit"]), to: "kg") }
        case "/vessel/ems":
            require("emsType", "Choose the EMS type.")
            for field in ["emsDescription", "registryNumber"] where item[field] == nil {
                item = item.setting(JSONPointer([field]), to: "")
            }
        case "/notes":
            require("note", "Write the note, or remove it.")
        default: break
        }
        return item
    }

    /// One field's text as the JSON value to store; nil removes the value.
    func parse(_ raw: String, field: FieldSpec, original: JSON?, path: String, errors: inout [String: String]) -> JSON? {
        if case .checkbox = field.kind {
            let on = !raw.isEmpty
            return original == nil && !on ? nil : .bool(on)
        }
        if let original, Self.text(of: original, kind: field.kind) == raw { return original }
        let text = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        if text.isEmpty { return nil }
        switch field.kind {
        case .integer:
            guard let value = Int64(text), value >= 0 else {
                errors[path] = "Enter a whole number, 0 or more."
                return original
            }
            return .int(value)
        case .number:
            guard let value = Double(text.replacingOccurrences(of: ",", with: ".")), value.isFinite else {
                errors[path] = "Enter a number."
                return original
            }
            return value.rounded() == value && abs(value) < 1e15 ? .int(Int64(value)) : .double(value)
        case .date:
            guard let date = Self.zonedDate(text) else {
                errors[path] = "Enter a date and time with its zone, e.g. 2024-05-01T10:30:00Z."
                return original
            }
            return .string(date)
        default:
            return .string(text)
        }
    }

    static func number(_ text: String, original: JSON?) -> JSON? {
        if let original, Self.text(of: original, kind: .number) == text { return original }
        guard let value = Double(text.replacingOccurrences(of: ",", with: ".")), value.isFinite else { return nil }
        return .double(value)
    }

    /// Accepts the stored format, and `YYYY-MM-DDTHH:MM` or `YYYY-MM-DD HH:MM` (taken as UTC).
    static func zonedDate(_ text: String) -> String? {
        if DateFormat.isZonedDateTime(text) { return text }
        var candidate = text.replacingOccurrences(of: " ", with: "T")
        if candidate.count == 16 { candidate += ":00" }
        if candidate.count == 19 { candidate += "Z" }
        return DateFormat.isZonedDateTime(candidate) ? candidate : nil
    }

    /// True for a value with nothing in it: empty strings, empty lists, objects of such.
    static func isBlank(_ value: JSON) -> Bool {
        switch value {
        case .null: return true
        case .string(let s): return s.isEmpty
        case .array(let items): return items.isEmpty
        case .object(let fields): return fields.values.allSatisfy(isBlank)
        default: return false
        }
    }
}

extension JSON {
    /// This value with the value at `pointer` replaced (nil removes it); missing objects on
    /// the way are created. Array segments must name an existing element.
    func setting(_ pointer: JSONPointer, to value: JSON?) -> JSON {
        guard let first = pointer.segments.first else { return value ?? .null }
        let rest = JSONPointer(Array(pointer.segments.dropFirst()))
        switch self {
        case .array(var items):
            guard let index = Int(first), items.indices.contains(index) else { return self }
            items[index] = items[index].setting(rest, to: value) 
            return .array(items)
        default:
            var fields = objectValue ?? [:]
            if rest.segments.isEmpty {
                fields[first] = value
            } else if value != nil || fields[first] != nil {
                fields[first] = (fields[first] ?? .object([:])).setting(rest, to: value)
            }
            return .object(fields)
        }
    }

    /// The RFC 7396 merge patch that turns `self` into `target` (both objects): changed keys
    /// with their new value, removed keys as null, nested objects as nested patches. Arrays
    /// are replaced whole, as merge patches do.
    func mergePatch(to target: JSON) -> JSON {
        guard case .object(let a) = self, case .object(let b) = target else { return target }
        var patch: JSONObject = [:]
        for key in a.keys where b[key] == nil { patch[key] = .null }
        for (key, value) in b where a[key] != value {
            if let old = a[key], case .object = old, case .object = value {
                patch[key] = old.mergePatch(to: value)
            } else {
                patch[key] = value
            }
        }
        return .object(patch)
    }

    /// The pointers a merge patch sets or removes, down to its leaves.
    func patchLeaves(at path: JSONPointer = JSONPointer()) -> [JSONPointer] {
        guard case .object(let fields) = self, !fields.isEmpty || path.segments.isEmpty else { return [path] }
        return fields.keys.sorted().flatMap { fields[$0]!.patchLeaves(at: path.appending($0)) }
    }
}
