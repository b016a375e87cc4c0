import Database
import FastCGI
import Support
import Sync
import TidewayJSON
import Web

/// The nine menu lists of an agency's `menuData` document, edited as text: one entry per
/// line, so adding, renaming, removing and reordering are all line edits. Violation codes
/// and their descriptions are edited together, one `code | description` pair per line, so
/// the two parallel lists cannot drift apart. Saved through the write path.
enum MenuListsEditor {
    /// The plain lists, with the labels people know them by.
    static let lists: [(field: String, label: String)] = [
        ("countryPickerPriorityList", "Countries listed first"), ("ports", "Ports"), ("fisheries", "Fisheries"),
        ("species", "Species"), ("emsTypes", "EMS types"), ("activities", "Activities"), ("gear", "Gear"),
    ]

    struct ListField {
        let field: String
        let label: String
        let text: String
        let count: Int
    }

    struct View {
        let lists: [ListField]
        let violations: String
        let violationCount: Int

        init(_ doc: JSON?) {
            lists = MenuListsEditor.lists.map { list in
                let items = strings(doc?[list.field])
                return ListField(field: list.field, label: list.label, text: items.joined(separator: "\n"), count: items.count)
            }
            let codes = strings(doc?["violationCodes"])
            let descriptions = strings(doc?["violationDescriptions"])
            violations = codes.enumerated().map { index, code in
                index < descriptions.count && !descriptions[index].isEmpty ? "\(code) | \(descriptions[index])" : code
            }.joined(separator: "\n")
            violationCount = codes.count
        }
    }

    static func strings(_ value: JSON?) -> [String] {
        value?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    /// Lines of a textarea: trimmed, empty ones dropped.
    static func lines(_ text: String) -> [String] {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// `code | description` lines into the two parallel lists.
    static func pairs(_ text: String) -> (codes: [String], descriptions: [String]) {
        var codes: [String] = []
        var descriptions: [String] = []
        for line in lines(text) {
            if let bar = line.firstIndex(of: "|") {
                codes.append(line[..<bar].trimmingCharacters(in: .whitespaces))
                descriptions.append(line[line.index(after: bar)...].trimmingCharacters(in: .whitespaces))
            } else {
                codes.append(line)
                descriptions.append("")
            }
        }
        return (codes, descriptions)
    }

    static func save(_ context: RequestContext) throws -> HTTPResponse {
        let key = Admin.pathParameter(context, "key")
        let form = try WebSession.postedForm(context)
        guard let partition = Partition("agency=" + key) else { throw AppError.notFound("no such agency") }
        var fields: JSONObject = [:]
        for list in lists {
            fields[list.field] = .array(lines(form[list.field] ?? "").map(JSON.string))
        }
        let (codes, descriptions) = pairs(form["violations"] ?? "")
        if codes.contains(where: \.isEmpty) { throw AppError.invalid("every violation line needs a code before the '|'") }
        fields["violationCodes"] = .array(codes.map(JSON.string))
        fields["violationDescriptions"] = .array(descriptions.map(JSON.string))
        return try WebSession.asUser(context) { tx, caller in
            try Admin.requireAgencyRights(caller, agency: key)
            let existing = try tx.query("""
                select id from sync.menu_data where partition = \(partition.description) and not deleted order by id limit 1
                """).first?["id"]
            let change = Change(
                changeID: Crypto.newToken(), collection: .menuData, partition: partition, id: existing ?? Admin.newDocumentID(),
                op: existing == nil ? .insert : .update, body: .object(fields))
            try Admin.write(change, caller: caller, in: tx, context: context)
            try Admin.audit(tx, context, caller, action: "menu.save", target: "agency:\(key)", detail: .object(fields))
            return Pages.redirect(AgencyPages.href(key) + "?saved=1#menu")
        }
    }
}
