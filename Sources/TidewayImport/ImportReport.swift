import Accounts
import Administration
import Database
import Foundation
import Mail
import Schema
import Support
import Sync
import TidewayJSON
import Web

/// What an import did (or, dry, would do), per source collection: created, updated,
/// skipped, refused (grouped by JSON Pointer path and reason, with the first few documents
/// named by file, position and `_id`), and the drift rules applied.
package struct ImportReport: Sendable {
    package struct Counts: Sendable {
        package var target: String
        package var created = 0
        package var updated = 0
        package var skipped = 0
        package var refused = 0
        /// (path, reason) -> how many, and up to 5 documents.
        package var refusals: [Mapping.Refusal: (count: Int, examples: [String])] = [:]
        package var adjusted: [Mapping.Adjustment: Int] = [:]

        /// Grouped by the path with array indexes as `-` and the reason without the
        /// offending number, so that one kind of problem is one line.
        mutating func refuse(_ exact: Mapping.Refusal, at source: String) {
            var reason = exact.reason
            if let got = reason.range(of: ", got ", options: .backwards),
               Double(reason[got.upperBound...]) != nil {
                reason = String(reason[..<got.lowerBound])
            }
            let refusal = Mapping.Refusal(path: Pointer.generic(exact.path), reason: reason)
            refused += 1
            var group = refusals[refusal] ?? (0, [])
            group.count += 1
            if group.examples.count < 5 { group.examples.append(source) }
            refusals[refusal] = group
        }
    }

    package struct Invitation: Sendable {
        package let email: String
        package let link: String
        /// "mailed", "mail failed: …" or "not mailed (no relay configured)".
        package let mail: String
    }

    package let dryRun: Bool
    /// Names this run in the audit log (`import:<runID>`) and the report file.
    package let runID = Crypto.hex(Crypto.randomBytes(6))
    /// Source collection -> counts, in the order first met.
    package private(set) var collections: [(name: String, counts: Counts)] = []
    /// Files or documents that could not be read, and unknown collections.
    package var problems: [String] = []
    package var invitations: [Invitation] = []
    package var seconds: Double = 0

    init(dryRun: Bool) { self.dryRun = dryRun }

    func counts(_ name: String, target: Mapping.Target) -> Counts {
        if let found = collections.first(where: { $0.name == name }) { return found.counts }
        let label: String
        switch target {
        case .documents(let collection): label = collection.rawValue
        case .agencies: label = "agencies"
        case .users: label = "accounts"
        case .history: label = "report history"
        case .chatMessages: label = "chatMessages"
        case .ignored: label = "(not imported)"
        }
        return Counts(target: label)
    }

    mutating func set(_ name: String, _ counts: Counts) {
        if let index = collections.firstIndex(where: { $0.name == name }) {
            collections[index].counts = counts
        } else {
            collections.append((name, counts))
        }
    }

    package var totalRefused: Int { collections.reduce(0) { $0 + $1.counts.refused } }
    package var totalDocuments: Int {
        collections.reduce(0) { $0 + $1.counts.created + $1.counts.updated + $1.counts.skipped + $1.counts.refused }
    }

    /// The summary printed at the end (and, dry, instead of writing).
    package func text() -> String {
        var lines: [String] = []
        lines.append(dryRun ? "import (dry run: nothing written) — what would happen:" : "import finished:")
        let header = ["collection", "into", dryRun ? "would create" : "created", dryRun ? "would update" : "updated", "skipped", "refused"]
        var rows = [header]
        for (name, c) in collections {
            rows.append([name, c.target, String(c.created), String(c.updated), String(c.skipped), String(c.refused)])
        }
        let widths = (0..<header.count).map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            lines.append("  " + row.enumerated().map { column, cell in
                column < 2 ? cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[column] - cell.count) + cell
            }.joined(separator: "  "))
        }
        for (name, c) in collections where !c.refusals.isEmpty {
            lines.append("refused in \(name):")
            for (refusal, group) in c.refusals.sorted(by: { ($0.value.count, $1.key.path) > ($1.value.count, $0.key.path) }) {
                lines.append("  \(refusal.path): \(refusal.reason) — \(group.count) document\(group.count == 1 ? "" : "s"): "
                    + group.examples.joined(separator: "; ") + (group.count > group.examples.count ? "; …" : ""))
            }
        }
        for (name, c) in collections where !c.adjusted.isEmpty {
            lines.append("adjusted in \(name) (docs/import.md, drift rules):")
            for (adjustment, count) in c.adjusted.sorted(by: { ($0.key.rule, $0.key.path) < ($1.key.rule, $1.key.path) }) {
                lines.append("  \(adjustment.rule) at \(adjustment.path): \(count)")
            }
        }
        if !problems.isEmpty {
            lines.append("problems:")
            lines += problems.map { "  " + $0 }
        }
        if !invitations.isEmpty {
            lines.append("invitations (one-time links, valid 72 hours; hand each to its person):")
            lines += invitations.map { "  \($0.email)  \($0.link)  (\($0.mail))" }
        }
        let documents = totalDocuments
        let rate = seconds > 0 ? Double(documents) / seconds : 0
        lines.append(String(format: "%d documents in %.1f s (%.0f docs/s)", documents, seconds, rate))
        if !dryRun { lines.append("audit log: import:\(runID)") }
        return lines.joined(separator: "\n")
    }

    /// The report file: the same, as JSON.
    package func json() -> JSON {
        var collectionsJSON: [JSON] = []
        for (name, c) in collections {
            collectionsJSON.append([
                "collection": .string(name), "into": .string(c.target),
                "created": .int(Int64(c.created)), "updated": .int(Int64(c.updated)),
                "skipped": .int(Int64(c.skipped)), "refused": .int(Int64(c.refused)),
                "refusals": .array(c.refusals.sorted { $0.key.path < $1.key.path }.map { refusal, group in
                    ["path": .string(refusal.path), "reason": .string(refusal.reason), "count": .int(Int64(group.count)),
                     "documents": .array(group.examples.map(JSON.string))]
                }),
                "adjusted": .array(c.adjusted.sorted { ($0.key.rule, $0.key.path) < ($1.key.rule, $1.key.path) }.map { adjustment, count in
                    ["rule": .string(adjustment.rule), "path": .string(adjustment.path), "count": .int(Int64(count))]
                }),
            ])
        }
        return [
            "run": .string(runID), "dryRun": .bool(dryRun), "seconds": .double((seconds * 1000).rounded() / 1000),
            "collections": .array(collectionsJSON), "problems": .array(problems.map(JSON.string)),
            "invitations": .array(invitations.map { ["email": .string($0.email), "link": .string($0.link), "mail": .string($0.mail)] }),
        ]
    }

    /// Totals first (the audit page shows the first 300 characters; jsonb puts short keys
    /// first), then per source collection "created/updated/skipped/refused".
    func auditDetail(files: Int) -> JSON {
        var perCollection: JSONObject = [:]
        for (name, c) in collections {
            perCollection[name] = .string("\(c.created)/\(c.updated)/\(c.skipped)/\(c.refused)")
        }
        func total(_ field: (Counts) -> Int) -> JSON { .int(Int64(collections.reduce(0) { $0 + field($1.counts) })) }
        return ["files": .int(Int64(files)), "created": total(\.created), "updated": total(\.updated),
                "skipped": total(\.skipped), "refused": total(\.refused), "invitations": .int(Int64(invitations.count)),
                "collections (created/updated/skipped/refused)": .object(perCollection)]
    }
}
