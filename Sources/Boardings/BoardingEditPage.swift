import Database
import FastCGI
import Foundation
import Schema
import Support
import Sync
import TidewayJSON
import Web

/// `/boardings/<id>/edit` and `/boardings/new`: one form for the whole report. No script:
/// "add" and "remove" buttons post the form, which comes back with the rows changed and
/// everything typed kept. Saving sends only what the user changed, as a merge patch on
/// the version they loaded, through the write path (so phones and the history see it).
/// When someone else changed the same field meanwhile, the page shows both values and
/// the user chooses; nothing is overwritten silently.
enum BoardingEditPage {
    // MARK: handlers

    static func editForm(_ context: RequestContext) throws -> HTTPResponse {
        let id = context.params["id"] ?? ""
        return try WebSession.asUser(context, readOnly: true) { tx, caller in
            let report = try BoardingPage.load(tx, id: id)
            try requireWrite(caller, partition: report.partition)
            let menus = BoardingMenus(rows: try tx.query(BoardingMenus.query(agency: agencyKey(report.partition))).rows)
            return render(context, caller: caller, mode: .edit(id: id), state: BoardingForm(document: report.doc),
                          base: report.doc, version: report.version, menus: menus)
        }
    }

    static func newForm(_ context: RequestContext) throws -> HTTPResponse {
        try WebSession.asUser(context, readOnly: true) { tx, caller in
            guard let agency = caller.info.agency else { throw noAgency }
            let menus = BoardingMenus(rows: try tx.query(BoardingMenus.query(agency: agency)).rows)
            let skeleton = newReport(caller: caller.info)
            return render(context, caller: caller, mode: .new, state: BoardingForm(document: skeleton),
                          base: skeleton, version: 0, menus: menus)
        }
    }

    static func saveEdit(_ context: RequestContext) throws -> HTTPResponse {
        let id = context.params["id"] ?? ""
        let form = try WebSession.postedForm(context)
        return try WebSession.asUser(context) { tx, caller in
            // Locked: nobody writes this report between the comparison below and the write.
            let current = try BoardingPage.load(tx, id: id, forUpdate: true)
            try requireWrite(caller, partition: current.partition)
            let menus = BoardingMenus(rows: try tx.query(BoardingMenus.query(agency: agencyKey(current.partition))).rows)
            guard let base = decodeBase(form["_base"]), let baseVersion = Int64(form["_version"] ?? "") else {
                throw AppError.badRequest("the form is incomplete; reload the page")
            }
            var state = BoardingForm(posted: form)
            let mode = Mode.edit(id: id)
            if rowAction(form, &state) {
                // Conflicts still to decide stay on the page (their choices are asked again).
                let shown = undecidedConflicts(form, edited: state.document(base: base, menus: menus).0, base: base, all: true)
                return render(context, caller: caller, mode: mode, state: state, base: base, version: baseVersion, menus: menus,
                              conflicts: shown)
            }
            var (edited, errors) = state.document(base: base, menus: menus)
            // A conflict shown earlier must be decided before anything is saved.
            let undecided = undecidedConflicts(form, edited: edited, base: base)
            if !undecided.isEmpty {
                return render(context, caller: caller, mode: mode, state: state, base: base, version: baseVersion,
                              menus: menus, errors: ["": "Choose which value to keep for each field below."],
                              conflicts: undecided, status: 409)
            }
            edited = applyChoices(form, to: edited, base: base)
            validate(edited, into: &errors)
            if !errors.isEmpty {
                return render(context, caller: caller, mode: mode, state: state, base: base, version: baseVersion,
                              menus: menus, errors: errors, status: 422)
            }
            let mine = base.mergePatch(to: edited)
            if mine == .object([:]) { return Pages.redirect(viewPath(id)) }
            if current.version != baseVersion {
                let conflicts = conflicting(mine: mine, base: base, edited: edited, current: current.doc)
                if !conflicts.isEmpty {
                    // The stored version becomes the base; the fields keep the user's values.
                    let merged = current.doc.applyingMergePatch(mine)
                    return render(context, caller: caller, mode: mode, state: BoardingForm(document: merged), base: current.doc,
                                  version: current.version, menus: menus, conflicts: conflicts, status: 409)
                }
            }
            guard let partition = Partition(current.partition) else { throw AppError(.internal, "bad partition") }
            let change = Change(changeID: "web-" + UUID().uuidString.lowercased(), collection: .reports, partition: partition,
                                id: id, op: .update, body: mine)
            let outcome = try write(change, caller: caller, context: context, tx: tx)
            if let failure = outcome {
                return render(context, caller: caller, mode: mode, state: state, base: base, version: baseVersion,
                              menus: menus, errors: failure, status: 422)
            }
            return Pages.redirect(viewPath(id) + "?saved=1")
        }
    }

    static func saveNew(_ context: RequestContext) throws -> HTTPResponse {
        let form = try WebSession.postedForm(context)
        return try WebSession.asUser(context) { tx, caller in
            guard let agency = caller.info.agency else { throw noAgency }
            let menus = BoardingMenus(rows: try tx.query(BoardingMenus.query(agency: agency)).rows)
            let base = decodeBase(form["_base"]) ?? newReport(caller: caller.info)
            var state = BoardingForm(posted: form)
            if rowAction(form, &state) {
                return render(context, caller: caller, mode: .new, state: state, base: base, version: 0, menus: menus)
            }
            let id = newObjectID()
            var (edited, errors) = state.document(base: base, menus: menus)
            edited = edited.setting(JSONPointer(["_id"]), to: .string(id))
            validate(edited, into: &errors)
            if !errors.isEmpty {
                return render(context, caller: caller, mode: .new, state: state, base: base, version: 0,
                              menus: menus, errors: errors, status: 422)
            }
            guard let partition = Partition("agency=" + agency) else { throw AppError(.internal, "bad partition") }
            let change = Change(changeID: "web-" + UUID().uuidString.lowercased(), collection: .reports, partition: partition,
                                id: id, op: .insert, body: edited)
            if let failure = try write(change, caller: caller, context: context, tx: tx) {
                return render(context, caller: caller, mode: .new, state: state, base: base, version: 0,
                              menus: menus, errors: failure, status: 422)
            }
            return Pages.redirect(viewPath(id) + "?saved=1")
        }
    }

    // MARK: saving

    /// Through the one write path; nil when applied, else the problem by pointer.
    static func write(_ change: Change, caller: PageCaller, context: RequestContext, tx: Transaction) throws -> [String: String]? {
        let results = try WritePath.apply(
            [.success(change)], clientID: nil, caller: caller.info, in: tx,
            limits: WritePath.Limits(documentBytes: context.app.config.limits.documentBytes))
        guard let result = results.first, result["status"]?.stringValue != "applied" else { return nil }
        let error = result["error"]
        if error?["code"]?.stringValue == "forbidden" { throw AppError.forbidden(error?["message"]?.stringValue ?? "not allowed") }
        let path = error?["path"]?.stringValue ?? ""
        return [path: friendly(error?["message"]?.stringValue ?? "the report was not saved")]
    }

    static func validate(_ doc: JSON, into errors: inout [String: String]) {
        guard errors.isEmpty else { return }
        if case .failure(let violation) = CollectionSchemas.validate(collection: "reports", document: doc) {
            errors[violation.path] = friendly(violation.message)
        }
    }

    static func friendly(_ message: String) -> String {
        if message.contains("required field missing") { return "Required." }
        if let colon = message.range(of: ": "), message.hasPrefix("reports ") { return String(message[colon.upperBound...]) }
        return message.prefix(1).uppercased() + message.dropFirst()
    }

    /// "Add another" and "remove" buttons: true when the post was one of them.
    static func rowAction(_ form: [String: String], _ state: inout BoardingForm) -> Bool {
        if let list = form["_add"] {
            state.addRow(to: list)
            return true
        }
        if let row = form["_remove"] {
            state.removeRow(row)
            return true
        }
        return false
    }

    /// After a conflict the user chose per field: "theirs" keeps the stored value.
    static func applyChoices(_ form: [String: String], to edited: JSON, base: JSON) -> JSON {
        var result = edited
        for (key, value) in form where key.hasPrefix("_choice:") && value == "theirs" {
            guard let pointer = JSONPointer(parsing: String(key.dropFirst("_choice:".count))), !pointer.segments.isEmpty else { continue }
            result = result.setting(pointer, to: base[pointer])
        }
        return result
    }

    /// Conflicts the page showed (`_conflict:<pointer>`) that the user has not decided.
    static func undecidedConflicts(_ form: [String: String], edited: JSON, base: JSON, all: Bool = false) -> [Conflict] {
        form.keys.sorted().compactMap { key -> Conflict? in
            guard key.hasPrefix("_conflict:") else { return nil }
            let pointerText = String(key.dropFirst("_conflict:".count))
            guard let pointer = JSONPointer(parsing: pointerText), !pointer.segments.isEmpty,
                  all || !["mine", "theirs"].contains(form["_choice:" + pointerText] ?? "")
            else { return nil }
            return conflict(at: pointer, mine: edited, theirs: base)
        }
    }

    static func conflict(at pointer: JSONPointer, mine: JSON, theirs: JSON) -> Conflict {
        Conflict(
            pointer: pointer.description,
            label: pointer.segments.map(BoardingFieldNames.label).joined(separator: " › "),
            mine: mine[pointer].map(BoardingHistory.summary) ?? "(empty)",
            theirs: theirs[pointer].map(BoardingHistory.summary) ?? "(empty)",
            choiceName: "_choice:" + pointer.description,
            id: "c" + pointer.segments.joined(separator: "-"))
    }

    struct Conflict {
        let pointer: String
        let label: String
        let mine: String
        let theirs: String
        let choiceName: String
        let id: String
    }

    /// Fields both the user and someone else changed since the user's version, to different
    /// values. Overlap counts at any depth: a field the user changed inside a list that the
    /// other writer replaced is a conflict on the list.
    static func conflicting(mine: JSON, base: JSON, edited: JSON, current: JSON) -> [Conflict] {
        let theirs = base.mergePatch(to: current)
        let theirLeaves = theirs.patchLeaves()
        var seen = Set<JSONPointer>()
        var conflicts: [Conflict] = []
        for leaf in mine.patchLeaves() {
            for other in theirLeaves {
                let shorter = leaf.segments.count <= other.segments.count ? leaf : other
                let longer = shorter == leaf ? other : leaf
                guard Array(longer.segments.prefix(shorter.segments.count)) == shorter.segments else { continue }
                guard edited[shorter] != current[shorter], seen.insert(shorter).inserted else { continue }
                conflicts.append(conflict(at: shorter, mine: edited, theirs: current))
            }
        }
        return conflicts
    }

    // MARK: helpers

    static let noAgency = AppError.forbidden("only members of an agency file reports; global admins read them")

    static func requireWrite(_ caller: PageCaller, partition: String) throws {
        guard let agency = caller.info.agency, "agency=" + agency == partition else {
            throw AppError.forbidden("only officers and admins of the report's agency can edit it")
        }
    }

    static func agencyKey(_ partition: String) -> String { String(partition.dropFirst("agency=".count)) }

    static func viewPath(_ id: String) -> String { "/boardings/" + FormData.encode(id) }

    /// A new report: filed now by the signed-in user.
    static func newReport(caller: CallerInfo) -> JSON {
        let now = UTCTimestamp.string(Date())
        let names = caller.displayName.split(separator: " ", maxSplits: 1).map(String.init)
        return [
            "timestamp": .string(now), "date": .string(now), "draft": false,
            "reportingOfficer": [
                "name": ["first": .string(names.first ?? ""), "last": .string(names.count > 1 ? names[1] : "")],
                "email": .string(caller.email),
            ],
        ]
    }

    /// A MongoDB-style ObjectId (seconds + random), the id shape the mobile apps use.
    static func newObjectID() -> String {
        let seconds = UInt32(truncatingIfNeeded: Int(Date().timeIntervalSince1970))
        let head = [UInt8(seconds >> 24), UInt8((seconds >> 16) & 0xff), UInt8((seconds >> 8) & 0xff), UInt8(seconds & 0xff)]
        return Crypto.hex(head + Crypto.randomBytes(8))
    }

    static func decodeBase(_ text: String?) -> JSON? {
        guard let text, let bytes = Crypto.base64Decode(text), let json = try? JSON(parsing: bytes), json.objectValue != nil
        else { return nil }
        return json
    }

    enum Mode {
        case new
        case edit(id: String)
    }

    static func render(
        _ context: RequestContext, caller: PageCaller, mode: Mode, state: BoardingForm, base: JSON, version: Int64,
        menus: BoardingMenus, errors: [String: String] = [:], conflicts: [Conflict] = [], status: Int = 200
    ) -> HTTPResponse {
        let view = BoardingFormView(
            caller: caller, mode: mode, state: state, base: base, version: version, menus: menus, errors: errors,
            conflicts: conflicts)
        return Pages.html(context, "boardings/form", view, status: status)
    }
}
