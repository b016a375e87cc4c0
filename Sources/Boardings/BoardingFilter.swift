import Database
import Foundation
import Support
import TidewayJSON
import Web

/// The state of a boardings list as query parameters: text search, filters, sort, page
/// size and keyset position. The same parameters drive the list page and both exports, so
/// a bookmarked or shared URL shows the same reports. Filtering narrows what row-level
/// security already allows; it never widens it.
struct BoardingFilter {
    enum SortKey: String, CaseIterable {
        case date, vessel, permit, captain, violations, officer, safety

        /// The stored fact column (Migrations/0031, computed by 0096's app.report_facts) the list sorts and pages by.
        var column: String {
            switch self {
            case .date: "boarded_at"
            case .vessel: "vessel_key"
            case .permit: "permit_key"
            case .captain: "captain_key"
            case .violations: "violation_count"
            case .officer: "officer_key"
            case .safety: "safety_rank"
            }
        }

        /// How a key value goes into and comes back from a page link, as text.
        var keyText: String {
            switch self {
            case .date: #"to_char(boarded_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')"#
            default: column + "::text"
            }
        }

        var cast: String {
            switch self {
            case .date: "timestamptz"
            case .violations: "integer"
            case .safety: "smallint"
            default: "text"
            }
        }

        var label: String {
            switch self {
            case .date: "Date"
            case .vessel: "Vessel"
            case .permit: "Permit"
            case .captain: "Captain"
            case .violations: "Violations"
            case .officer: "Officer"
            case .safety: "Safety"
            }
        }

        /// Newest, most violations and worst safety first; names A to Z.
        var defaultDescending: Bool { self == .date || self == .violations || self == .safety }
    }

    static let pageSizes = [25, 50, 100]
    static let safetyLevels = ["Red": 3, "Amber": 2, "Green": 1]

    var text = ""
    var from = ""
    var to = ""
    var agency = ""
    var officer = ""
    var safety = ""
    var violations = ""
    var disposition = ""
    var nationality = ""
    var species = ""
    var draft = ""
    var sort = SortKey.date
    var descending = true
    var size = 25
    /// Keyset position: the (key, id) of the row just before (after=) or after (before=) the page.
    var after: (key: String, id: String)?
    var before: (key: String, id: String)?
    /// Parameters that were given but not understood, said back to the user.
    var problems: [String] = []

    init(query: [String: String], allowAgency: Bool) {
        func value(_ name: String) -> String { (query[name] ?? "").trimmingCharacters(in: .whitespaces) }
        text = String(value("q").prefix(200))
        from = value("from")
        to = value("to")
        for (name, date) in [("from", from), ("to", to)] where !date.isEmpty && Self.day(date) == nil {
            problems.append("“\(date)” is not a date (YYYY-MM-DD); the \(name) date is ignored")
        }
        if Self.day(from) == nil { from = "" }
        if Self.day(to) == nil { to = "" }
        if allowAgency { agency = value("agency") }
        officer = String(value("officer").prefix(200))
        safety = Self.safetyLevels[value("safety")] != nil ? value("safety") : ""
        violations = ["yes", "no"].contains(value("violations")) ? value("violations") : ""
        disposition = ["Warning", "Citation", "none"].contains(value("disposition")) ? value("disposition") : ""
        nationality = String(value("nationality").prefix(100))
        species = String(value("species").prefix(200))
        draft = ["yes", "no"].contains(value("draft")) ? value("draft") : ""
        if let key = SortKey(rawValue: value("sort")) { sort = key }
        switch value("dir") {
        case "asc": descending = false
        case "desc": descending = true
        default: descending = sort.defaultDescending
        }
        if let size = Int(value("size")), Self.pageSizes.contains(size) { self.size = size }
        after = Self.decodePosition(value("after"))
        before = after == nil ? Self.decodePosition(value("before")) : nil
    }

    /// `YYYY-MM-DD`, checked, or nil.
    static func day(_ text: String) -> String? {
        guard text.count == 10, text.range(of: #"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"#, options: .regularExpression) != nil else { return nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd"
        guard let date = formatter.date(from: text), formatter.string(from: date) == text else { return nil }
        return text
    }

    var hasFilters: Bool {
        ![text, from, to, agency, officer, safety, violations, disposition, nationality, species, draft].allSatisfy(\.isEmpty)
    }

    // MARK: SQL

    /// The conditions of the list, beyond row-level security. `ownPartition` is the caller's
    /// agency partition for anyone but a global admin: redundant with the policies (they
    /// decide), but it lets the planner use the partition index.
    func conditions(ownPartition: String?) -> SQL {
        var parts: [SQL] = ["not r.deleted"]
        if let ownPartition { parts.append("r.partition = \(ownPartition)") }
        if !agency.isEmpty { parts.append("r.partition = \("agency=" + agency)") }
        if let query = Self.tsquery(text) { parts.append("r.search @@ to_tsquery('simple', app.fold(\(query)))") }
        if !from.isEmpty { parts.append("r.boarded_at >= \(from)::date::timestamp at time zone 'UTC'") }
        if !to.isEmpty { parts.append("r.boarded_at < (\(to)::date + 1)::timestamp at time zone 'UTC'") }
        if !officer.isEmpty { parts.append("strpos(r.officer_key, lower(\(officer))) > 0") }
        if let rank = Self.safetyLevels[safety] { parts.append("r.safety_rank = \(rank)") }
        if violations == "yes" { parts.append("r.violation_count > 0") }
        if violations == "no" { parts.append("r.violation_count = 0") }
        if disposition == "none" {
            parts.append("r.dispositions = '{}'")
        } else if !disposition.isEmpty {
            parts.append("\(disposition) = any(r.dispositions)")
        }
        if !nationality.isEmpty { parts.append("r.nationality_key = app.fold(\(nationality))") }
        if !species.isEmpty { parts.append("\(species) = any(r.species)") }
        if draft == "yes" { parts.append("r.is_draft") }
        if draft == "no" { parts.append("not r.is_draft") }
        return SQL.join(parts, separator: " and ")
    }

    /// Every word of the search as a prefix match, all required: `cafe 12` finds “Café 1234”.
    /// Only letters and digits reach to_tsquery, so its syntax cannot be injected.
    static func tsquery(_ text: String) -> String? {
        let words = text.split { !($0.isLetter || $0.isNumber) }.prefix(12)
        guard !words.isEmpty else { return nil }
        return words.map { "'\($0.lowercased())':*" }.joined(separator: " & ")
    }

    /// The page's rows in display order, one extra to tell whether there is a next page.
    func pageQuery(ownPartition: String?, columns: String) -> SQL {
        let clauses = conditions(ownPartition: ownPartition)
        // Walking backwards (before=) reverses the order; the page is flipped back after.
        let backwards = before != nil
        let ascending = descending == backwards
        let direction = ascending ? "asc" : "desc"
        let order = "order by r.\(sort.column) \(direction), r.id \(direction)"
        let limit = SQL(unsafeSQL: " \(order) limit \(size + 1)")
        let ids: SQL
        if let position = after ?? before {
            // The rows after (key, id) in two index ranges: the rest of the key's ties
            // (`key = k and id > i`), then, only if they do not fill the page, the keys
            // beyond (`key > k`; its one-time filter on the ties' count skips the scan). As one
            // condition, `key >= k and (key > k or id > i)` bounds the index by the key alone:
            // a deep page of a sort with few distinct keys (safety, violations) read every tie
            // before its position, 14–36 ms at 100,000 reports (docs/performance/round-11.md, "Which of
            // sync.reports' indexes earn their cost"). Both ranges always scanned would be
            // worse: the second, filtered to one agency, can run through every other agency's
            // keys to find its first row. Spelled out rather than as a row comparison: record
            // comparison is not leakproof, so under row-level security it could never be an
            // index condition.
            let op = ascending ? ">" : "<"
            let column = "r." + sort.column
            let key: SQL = "\(position.key)" + SQL(unsafeSQL: "::\(sort.cast)")
            let matching = SQL(unsafeSQL: "select r.id, \(column) as key from sync.reports r where ") + clauses
            ids = SQL(unsafeSQL: "with ties as materialized (") + matching
                + SQL(unsafeSQL: " and \(column) = ") + key + SQL(unsafeSQL: " and r.id \(op) ") + "\(position.id)" + limit
                + SQL(unsafeSQL: ") select id from (select id, key from ties union all (") + matching
                + SQL(unsafeSQL: " and \(column) \(op) ") + key + SQL(unsafeSQL: " and (select count(*) from ties) < \(size + 1)") + limit
                + SQL(unsafeSQL: ")) u order by u.key \(direction), u.id \(direction) limit \(size + 1)")
        } else {
            ids = SQL(unsafeSQL: "select r.id from sync.reports r where ") + clauses + limit
        }
        // The page's ids first, its columns after: the columns read the documents, and a
        // search matching thousands of reports would otherwise read every one of them
        // before keeping the first page (measured: 68 ms instead of 20 for 1,261 matches).
        return SQL(unsafeSQL: "select \(columns), \(sort.keyText) as sort_key from (") + ids
            + SQL(unsafeSQL: ") page join sync.reports r on r.id = page.id \(order)")
    }

    /// Every matching row in the list's order, for an export cursor.
    func exportQuery(ownPartition: String?, columns: String) -> SQL {
        let direction = descending ? "desc" : "asc"
        return SQL(unsafeSQL: "select \(columns) from sync.reports r where ") + conditions(ownPartition: ownPartition)
            + SQL(unsafeSQL: " order by r.\(sort.column) \(direction), r.id \(direction)")
    }

    // MARK: URLs

    /// The parameters of this view, as (name, value) pairs, leaving out defaults.
    func parameters(includePosition: Bool = false) -> [(String, String)] {
        var pairs: [(String, String)] = [
            ("q", text), ("from", from), ("to", to), ("agency", agency), ("officer", officer), ("safety", safety),
            ("violations", violations), ("disposition", disposition), ("nationality", nationality),
            ("species", species), ("draft", draft),
        ]
        if sort != .date { pairs.append(("sort", sort.rawValue)) }
        if descending != sort.defaultDescending { pairs.append(("dir", descending ? "desc" : "asc")) }
        if size != 25 { pairs.append(("size", String(size))) }
        if includePosition, let after { pairs.append(("after", Self.encodePosition(after))) }
        if includePosition, let before { pairs.append(("before", Self.encodePosition(before))) }
        return pairs.filter { !$0.1.isEmpty }
    }

    static func queryString(_ pairs: [(String, String)]) -> String {
        pairs.isEmpty ? "" : "?" + pairs.map { FormData.encode($0.0) + "=" + FormData.encode($0.1) }.joined(separator: "&")
    }

    /// This view with some parameters changed (an empty value removes one); back to page one.
    func url(_ path: String = "/boardings", changing changes: [String: String] = [:]) -> String {
        var pairs = parameters().filter { changes[$0.0] == nil }
        for (name, value) in changes.sorted(by: { $0.key < $1.key }) where !value.isEmpty { pairs.append((name, value)) }
        return path + Self.queryString(pairs)
    }

    static func encodePosition(_ position: (key: String, id: String)) -> String {
        Crypto.base64url(Array(JSON.array([.string(position.key), .string(position.id)]).serializedBytes()))
    }

    static func decodePosition(_ text: String) -> (key: String, id: String)? {
        guard !text.isEmpty, let bytes = Crypto.base64Decode(text), let json = try? JSON(parsing: bytes),
              let parts = json.arrayValue, parts.count == 2, let key = parts[0].stringValue, let id = parts[1].stringValue,
              key.utf8.count <= 300, id.utf8.count <= 128
        else { return nil }
        return (key, id)
    }
}
