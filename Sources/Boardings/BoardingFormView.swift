import Support
import TidewayJSON
import Web

/// What the report form template shows: parts (groups of fields, lists of rows), each field
/// with its label, value, picker options and message; the hidden base the save compares
/// against; and, after a conflicting save, both values of each contested field.
struct BoardingFormView {
    struct Option {
        let value: String
        let label: String
        let selected: Bool
    }

    struct Field {
        let name: String
        let id: String
        let label: String
        let value: String
        let hint: String?
        let error: String?
        let describedBy: String
        let isTextarea: Bool
        let isCheckbox: Bool
        let isSelect: Bool
        let isInput: Bool
        let inputMode: String
        let checked: Bool
        let options: [Option]
    }

    struct RowView {
        let legend: String
        let fromName: String
        let fromValue: String
        let fields: [Field]
        let removeValue: String
        let removeLabel: String
    }

    struct PartView {
        let id: String
        let title: String
        let isList: Bool
        let fields: [Field]
        let rows: [RowView]
        let hasRows: Bool
        let addValue: String
        let addLabel: String
        let emptyText: String
    }

    struct ErrorLink {
        let href: String
        let label: String
        let message: String
    }

    let chrome: Pages.Chrome
    let heading: String
    let action: String
    let cancelHref: String
    let csrf: String
    let base: String
    let version: String
    let parts: [PartView]
    let errorLinks: [ErrorLink]
    let hasErrors: Bool
    let conflicts: [BoardingEditPage.Conflict]
    let hasConflicts: Bool
    let saveLabel: String

    init(caller: PageCaller, mode: BoardingEditPage.Mode, state: BoardingForm, base: JSON, version: Int64,
         menus: BoardingMenus, errors: [String: String], conflicts: [BoardingEditPage.Conflict]) {
        switch mode {
        case .new:
            heading = "New boarding report"
            action = "/boardings/new"
            cancelHref = "/boardings"
            saveLabel = "Save report"
        case .edit(let id):
            let vessel = base["vessel"]?["name"]?.stringValue ?? ""
            heading = "Edit boarding" + (vessel.isEmpty ? "" : " of " + vessel)
            action = BoardingEditPage.viewPath(id) + "/edit"
            cancelHref = BoardingEditPage.viewPath(id)
            saveLabel = "Save changes"
        }
        chrome = Pages.Chrome(title: heading, caller: caller)
        csrf = caller.csrf
        self.base = Crypto.base64url(base.serializedBytes())
        self.version = String(version)
        self.conflicts = conflicts
        hasConflicts = !conflicts.isEmpty

        var shown = Set<String>()
        func field(_ spec: BoardingForm.FieldSpec, name: String, label: String) -> Field {
            shown.insert(name)
            let value = state.values[name] ?? ""
            let id = "f" + name.replacingOccurrences(of: "/", with: "-")
            let error = errors[name]
            var options: [Option] = []
            var isSelect = false
            switch spec.kind {
            case .menu(let list):
                isSelect = true
                options = Self.options(Self.menu(list, menus), selected: value)
            case .choices(let choices):
                isSelect = true
                options = choices.map { Option(value: $0.value, label: $0.label, selected: $0.value == value) }
                if !value.isEmpty, !choices.contains(where: { $0.value == value }) {
                    options.append(Option(value: value, label: value, selected: true))
                }
            default: break
            }
            var isTextarea = false, isCheckbox = false
            if case .textarea = spec.kind { isTextarea = true }
            if case .checkbox = spec.kind { isCheckbox = true }
            let inputMode: String =
                switch spec.kind {
                case .number: "decimal"
                case .integer: "numeric"
                default: "text"
                }
            let describedBy = [spec.hint.map { _ in id + "-hint" }, error.map { _ in id + "-error" }].compactMap { $0 }.joined(separator: " ")
            return Field(
                name: name, id: id, label: label, value: value, hint: spec.hint, error: error, describedBy: describedBy,
                isTextarea: isTextarea, isCheckbox: isCheckbox, isSelect: isSelect, isInput: !(isTextarea || isCheckbox || isSelect),
                inputMode: inputMode, checked: !value.isEmpty, options: options)
        }

        var parts: [PartView] = []
        for part in BoardingForm.parts {
            switch part {
            case .group(let id, let title, let specs):
                parts.append(PartView(
                    id: id, title: title, isList: false, fields: specs.map { field($0, name: $0.path, label: $0.label) },
                    rows: [], hasRows: false, addValue: "", addLabel: "", emptyText: ""))
            case .list(let list):
                let rows = (state.rows[list.path] ?? []).enumerated().map { index, from -> RowView in
                    let prefix = "\(list.path)/\(index)"
                    return RowView(
                        legend: "\(list.itemName.prefix(1).uppercased() + list.itemName.dropFirst()) \(index + 1)",
                        fromName: prefix + "/_from", fromValue: from.map(String.init) ?? "",
                        fields: list.fields.map { field($0, name: prefix + "/" + $0.path, label: $0.label) },
                        removeValue: prefix, removeLabel: "Remove \(list.itemName) \(index + 1)")
                }
                parts.append(PartView(
                    id: list.path.split(separator: "/").last.map(String.init) ?? "list", title: list.title, isList: true,
                    fields: [], rows: rows, hasRows: !rows.isEmpty, addValue: list.path, addLabel: "Add \(list.itemName)",
                    emptyText: "None yet."))
            }
        }
        self.parts = parts
        // Every message, linked to its field; one the form has no field for shows at the top.
        errorLinks = errors.keys.sorted().map { name in
            let message = errors[name] ?? ""
            if shown.contains(name) {
                return ErrorLink(href: "#f" + name.replacingOccurrences(of: "/", with: "-"),
                                 label: name.split(separator: "/").map { BoardingFieldNames.label(String($0)) }.joined(separator: " › "),
                                 message: message)
            }
            return ErrorLink(href: "#form-top", label: name.isEmpty ? "Report" : name, message: message)
        }
        hasErrors = !errors.isEmpty
    }

    static func menu(_ name: String, _ menus: BoardingMenus) -> [(String, String)] {
        func same(_ list: [String]) -> [(String, String)] { list.map { ($0, $0) } }
        switch name {
        case "countries": return same(menus.countries)
        case "ports": return same(menus.ports)
        case "fisheries": return same(menus.fisheries)
        case "species": return same(menus.species)
        case "emsTypes": return same(menus.emsTypes)
        case "activities": return same(menus.activities)
        case "gear": return same(menus.gear)
        case "violationCodes": return menus.violations.map { ($0.code, $0.description.isEmpty ? $0.code : "\($0.code) — \($0.description)") }
        default: return []
        }
    }

    /// The menu's choices, a blank first, and the current value even when the menu lacks it
    /// (an older report, another agency's list): editing never loses a value.
    static func options(_ choices: [(String, String)], selected: String) -> [Option] {
        var options = [Option(value: "", label: "—", selected: selected.isEmpty)]
        options += choices.map { Option(value: $0.0, label: $0.1, selected: $0.0 == selected) }
        if !selected.isEmpty, !choices.contains(where: { $0.0 == selected }) {
            options.append(Option(value: selected, label: selected, selected: true))
        }
        return options
    }
}
