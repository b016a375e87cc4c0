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

/// `tideway import`: reads Atlas exports, maps them (Mapping), and writes every document
/// through the sync write path (WritePath.apply) in batches of one agency's partition,
/// one transaction per batch. A document already there with the same content is skipped,
/// so a second run changes nothing and a run killed halfway (its open batch rolled back)
/// finishes on the next without duplicates: ids are the exports' own.
package final class Importer {
    package struct Options: Sendable {
        package var dryRun = false
        package var strict = false
        package var batchSize = 1000
        /// Where invitation links point (TIDEWAY_PUBLIC_URL).
        package var publicURL = "https://localhost:8443"
        /// The global admin the audit entry and invitations are recorded under (default: the oldest active one).
        package var actorEmail: String?
        package var progress = true
        /// Invitations are mailed through this relay when set (TIDEWAY_SMTP_*), and printed either way.
        package var mail: MailSettings?
        package init() {}
    }

    let connection: Connection
    let options: Options
    package internal(set) var report: ImportReport
    var progress: Progress
    /// RChat: conversations as the users' documents list them, by id.
    var conversations: [String: Conversation] = [:]
    var conversationsReady = false
    /// Conversations that got new messages in this run (their unread counts are set after).
    var conversationsWritten: Set<String> = []
    /// Accounts by lower-case email (RChat's userName), for message authors.
    var accounts: [String: (id: String, email: String)]?
    /// Emails of the accounts a dry run would create.
    var wouldCreate: Set<String> = []

    struct Conversation {
        var displayName: String
        var members: [String] = []
        /// Lower-case userName -> unreadCount in that user's copy.
        var unread: [String: Int64] = [:]
    }
    /// The push path's document limit (Config.Limits.documentBytes, 1 MiB).
    let limits = WritePath.Limits(documentBytes: 1024 * 1024)

    package init(connection: Connection, options: Options) {
        self.connection = connection
        self.options = options
        self.report = ImportReport(dryRun: options.dryRun)
        self.progress = Progress(enabled: options.progress)
    }

    /// A document read and mapped, waiting for its batch.
    struct Pending {
        let source: Source
        let id: String
        let partition: String
        let doc: JSON
        /// The SHA-256 of a photo's picture bytes (skip when the blob store has them).
        let pictureSHA: String?
    }

    /// Where a document came from, for messages: file, position, `_id`.
    struct Source {
        let file: String
        let index: Int
        let id: String?
        var text: String { "\(file) #\(index + 1)" + (id.map { " _id \($0)" } ?? "") }
    }

    /// A streamed file's documents one at a time, each with where it came from: the progress
    /// line advanced, an unreadable document handed to `unreadable`, and a file cut short
    /// (an ImportError) a problem of the run, so the next file is still read.
    func forEachReadable(_ file: InputFile, unreadable: (ReadError) -> Void,
                         _ body: (BSONValue, Source) throws -> Void) throws {
        let fileBytes = file.diskBytes
        var previous = 0.0
        do {
            try file.forEachDocument { index, fraction, result in
                progress.advance(1, bytes: Int(Double(fileBytes) * (fraction - previous)), label: file.collection)
                previous = fraction
                switch result {
                case .failure(let error):
                    unreadable(error)
                case .success(let doc):
                    try body(doc, Source(file: file.path, index: index, id: Mapping.id(doc["_id"])))
                }
            }
        } catch let error as ImportError {
            report.problems.append(error.description)
        }
    }

    /// The document's `_id` in `collection`, claimed; nil (and the document refused) when it
    /// has none or an earlier document, of this file or another, has it: the first is imported.
    static func claimID(of source: Source, in collection: SyncCollection, seen: inout [String: Source],
                        counts: inout ImportReport.Counts) -> String? {
        guard let id = source.id else {
            counts.refuse(.init(path: "/_id", reason: "missing, or not an ObjectId, string or number"), at: source.text)
            return nil
        }
        let key = collection.rawValue + "/" + id
        if let first = seen[key] {
            counts.refuse(.init(path: "/_id", reason: "duplicate _id (the first one, \(first.text), is imported)"), at: source.text)
            return nil
        }
        seen[key] = source
        return id
    }

    package func run(_ files: [InputFile]) throws -> ImportReport {
        let started = Date()
        let actor = try findActor()
        var knownAgencies = try agencyKeys()
        var history: [String: [(Int64, String)]] = [:]
        // (target collection, id) -> where it was first seen: duplicates across files are refused.
        var seen: [String: Source] = [:]

        let ordered = files.enumerated().sorted { a, b in
            let ra = Mapping.target(of: a.element.collection).map(Mapping.rank) ?? 9
            let rb = Mapping.target(of: b.element.collection).map(Mapping.rank) ?? 9
            return (ra, a.offset) < (rb, b.offset)
        }.map(\.element)

        // Files are read one at a time and their documents handled as they are read: only
        // one batch of documents (and the history, as text) is held at once.
        var known: [(InputFile, Mapping.Target)] = []
        for file in ordered {
            guard let target = Mapping.target(of: file.collection) else {
                report.problems.append("\(file.path): unknown collection '\(file.collection)': not imported "
                    + "(known: BoardingReports, Photo, DutyChange, MenuData, Agency, User, ChangeHistory, Chatster, ChatMessage)")
                continue
            }
            known.append((file, target))
            progress.totalBytes += file.diskBytes
        }

        for (file, target) in known {
            var counts = report.counts(file.collection, target: target)
            defer { report.set(file.collection, counts) }
            let fileBytes = file.diskBytes
            func unreadable(_ error: ReadError) {
                counts.refuse(Mapping.Refusal(path: "/", reason: "unreadable: " + error.message),
                              at: "\(file.path) document #\(error.document + 1) (\(error.location))")
                report.problems.append("\(file.path): document #\(error.document + 1) (\(error.location)): \(error.message)")
            }
            switch target {
            case .ignored, .agencies, .users:
                // Small collections: read whole.
                let output: BSONReader.Output
                do {
                    output = try file.read()
                } catch {
                    report.problems.append("\(error)")
                    continue
                }
                output.errors.forEach(unreadable)
                switch target {
                case .ignored(let reason):
                    counts.skipped += output.documents.count
                    if !output.documents.isEmpty {
                        report.problems.append("\(file.path): \(output.documents.count) documents not imported: \(reason)")
                    }
                case .agencies:
                    try importAgencies(output, file: file, counts: &counts, known: &knownAgencies)
                default:
                    try importUsers(output, file: file, counts: &counts, known: knownAgencies, actor: actor)
                }
                progress.advance(output.documents.count, bytes: fileBytes, label: file.collection)
            case .history:
                try forEachReadable(file, unreadable: unreadable) { doc, source in
                    guard let reportID = Mapping.id(doc["originalDocument"]?["_id"] ?? doc["recordId"] ?? doc["reportId"]) else {
                        counts.refuse(.init(path: "/originalDocument/_id", reason: "missing: which report this history belongs to"),
                                      at: source.text)
                        return
                    }
                    let at: Int64
                    switch doc["dateCreated"] ?? doc["date"] {
                    case .date(let millis)?: at = millis
                    case .string(let text)? where ISODate.millis(text) != nil: at = ISODate.millis(text)!
                    default:
                        counts.refuse(.init(path: "/dateCreated", reason: "missing or not a date"), at: source.text)
                        return
                    }
                    var change = Mapping.json(doc).objectValue ?? [:]
                    change["importedFrom"] = "ChangeHistory"
                    history[reportID, default: []].append((at, JSON.object(change).serialized()))
                    counts.created += 1
                }
            case .chatMessages:
                try ensureConversations()
                try importMessages(file, counts: &counts, seen: &seen, unreadable: unreadable)
            case .documents(let collection):
                var batch: [String: [Pending]] = [:]
                try forEachReadable(file, unreadable: unreadable) { doc, source in
                    guard let id = Self.claimID(of: source, in: collection, seen: &seen, counts: &counts) else { return }
                    guard let agency = Mapping.agency(of: doc) else {
                        counts.refuse(.init(path: "/agency", reason: "missing: the agency (partition) the document belongs to"),
                                      at: source.text)
                        return
                    }
                    guard knownAgencies.contains(agency) else {
                        counts.refuse(.init(path: "/agency", reason: "no such agency (import its Agency document or create it first)"),
                                      at: source.text)
                        return
                    }
                    guard let fields = Mapping.storedFields(of: doc, id: id) else { return }
                    var pictureSHA: String?
                    if collection == .photos, case .binary(_, let bytes)? = doc["picture"] {
                        pictureSHA = Crypto.hex(Crypto.sha256(bytes))
                    }
                    switch Mapping.fit(.object(fields), collection: collection, strict: options.strict) {
                    case .failure(let refusal):
                        counts.refuse(refusal, at: source.text)
                    case .success(let (fitted, adjustments)):
                        for adjustment in adjustments { counts.adjusted[adjustment, default: 0] += 1 }
                        let partition = Partition.agency(agency)
                        batch[partition, default: []].append(
                            Pending(source: source, id: id, partition: partition, doc: fitted, pictureSHA: pictureSHA))
                        if batch[partition]!.count >= options.batchSize {
                            try write(batch.removeValue(forKey: partition)!, collection: collection, history: history, counts: &counts)
                        }
                    }
                }
                for partition in batch.keys.sorted() {
                    try write(batch[partition]!, collection: collection, history: history, counts: &counts)
                }
            }
        }
        try ensureConversations()
        try setUnreadCounts()
        progress.finish()
        report.seconds = Date().timeIntervalSince(started)
        if !options.dryRun, let actor {
            try connection.transaction { tx in
                _ = try tx.query("""
                    insert into app.audit_log (actor, actor_email, action, target, detail)
                    values (\(actor.id)::uuid, \(actor.email), 'import', \("import:" + report.runID), \(report.auditDetail(files: files.count).serialized())::jsonb)
                    """)
            }
        }
        return report
    }

    // MARK: documents

    /// One batch of one partition: compare with what is stored, then write the new and the
    /// changed documents through the write path, in one transaction.
    private func write(_ pending: [Pending], collection: SyncCollection, history: [String: [(Int64, String)]],
                       counts: inout ImportReport.Counts) throws {
        guard let first = pending.first, let partition = Partition(first.partition) else { return }
        let agency = partition.value
        let ids = pending.map(\.id)
        try connection.transaction { tx in
            let current = Statement.rows("""
                select id, partition, doc::text as doc, deleted from sync.\(unsafeSQL: collection.table)
                 where id = any(\(ids)::text[]) order by id for update
                """)
            let storedRows: [Row]
            var blobRows: [Row] = []
            if collection == .photos {
                (storedRows, blobRows) = try tx.run(
                    current, Statement.rows("select photo_id, sha256 from app.photo_blobs where photo_id = any(\(ids)::text[])"))
            } else {
                storedRows = try tx.run(current)
            }
            var stored: [String: (partition: String, doc: JSON?)] = [:]
            for row in storedRows {
                guard let id = row["id"] else { continue }
                let doc = row.bool("deleted") == true ? nil : try row["doc"].map {
                    try JSON(parsing: $0, limits: JSONLimits(maxDepth: 100, maxStringBytes: 64 * 1024 * 1024))
                }
                stored[id] = (row["partition"] ?? "", doc)
            }
            var blobs: [String: String] = [:]
            for row in blobRows { if let id = row["photo_id"] { blobs[id] = row["sha256"] } }

            var changes: [WritePath.Input] = []
            var writing: [(Pending, isNew: Bool)] = []
            for item in pending {
                let existing = stored[item.id]
                if let existing, existing.partition != item.partition {
                    counts.refuse(.init(path: "/_id", reason: "a document with this id exists in another partition (\(existing.partition))"),
                                  at: item.source.text)
                    continue
                }
                if let doc = existing?.doc, Self.same(stored: doc, new: item.doc, collection: collection,
                                                      storedSHA: blobs[item.id], newSHA: item.pictureSHA) {
                    counts.skipped += 1
                    continue
                }
                changes.append(.success(Change(changeID: "import:" + item.id, collection: collection, partition: partition,
                                               id: item.id, op: .insert, body: item.doc)))
                writing.append((item, existing?.doc == nil))
            }
            guard !options.dryRun else {
                for (_, isNew) in writing { if isNew { counts.created += 1 } else { counts.updated += 1 } }
                return
            }
            guard !changes.isEmpty else { return }
            // A new report's history from before Tideway comes first in its chain.
            var withHistory: [String] = []
            if collection == .reports {
                var reportIDs: [String] = [], partitions: [String] = [], entries: [String] = []
                for (item, isNew) in writing where isNew {
                    guard let list = history[item.id], !list.isEmpty else { continue }
                    reportIDs.append(item.id)
                    partitions.append(item.partition)
                    let sorted = list.sorted { $0.0 < $1.0 }
                    // Built as text: the history is held serialized (a big import has one per report).
                    entries.append("[" + sorted.map { "{\"at\":\"\(ISODate.string(millis: $0.0))\",\"change\":\($0.1)}" }
                        .joined(separator: ",") + "]")
                }
                if !reportIDs.isEmpty {
                    _ = try tx.query("""
                        select app.import_report_history(r, p, e)
                          from unnest(\(reportIDs)::text[], \(partitions)::text[], \(entries)::jsonb[]) as t(r, p, e)
                        """)
                    withHistory = reportIDs
                }
            }
            // The sync write path, under the claims of the agency's administrator (row-level
            // security on, as for a push; no user; history entries say device "import").
            _ = try tx.run(
                Statement.effect("set local role tideway_worker"),
                Statement.effect("""
                    select set_config('tideway.role', 'agencyAdmin', true), set_config('tideway.agency', \(agency), true),
                           set_config('tideway.user_id', '', true), set_config('tideway.device', 'import', true)
                    """))
            let results = try WritePath.apply(changes, clientID: nil, device: "import", caller: CallerInfo(serviceFor: agency),
                                              in: tx, limits: limits)
            var rejected: [String] = []
            for ((item, isNew), result) in zip(writing, results) {
                if result["status"]?.stringValue == "applied" {
                    if isNew { counts.created += 1 } else { counts.updated += 1 }
                } else {
                    let error = result["error"]
                    counts.refuse(.init(path: error?["path"]?.stringValue ?? "/",
                                        reason: "\(error?["code"]?.stringValue ?? "rejected"): \(error?["message"]?.stringValue ?? "")"),
                                  at: item.source.text)
                    rejected.append(item.id)
                }
            }
            _ = try tx.query("reset role")
            let orphaned = rejected.filter(withHistory.contains)
            if !orphaned.isEmpty {
                // Nothing half-written: a refused report leaves no imported history behind.
                _ = try tx.query("""
                    delete from app.report_history h where h.report_id = any(\(orphaned)::text[]) and h.device = 'import'
                       and not exists (select 1 from sync.reports r where r.id = h.report_id)
                    """)
            }
        }
    }

    /// Whether the stored document already is what the import would write. A photo whose
    /// picture went to the blob store counts as the same when the store holds those bytes.
    static func same(stored: JSON, new: JSON, collection: SyncCollection, storedSHA: String?, newSHA: String?) -> Bool {
        guard collection == .photos, case .object(var old) = stored, case .object(var fresh) = new else {
            return canonical(stored) == canonical(new)
        }
        if fresh["picture"] != nil && old["picture"] == nil {
            guard storedSHA != nil, storedSHA == newSHA else { return false }
            fresh["picture"] = nil
            old["pictureURL"] = fresh["pictureURL"]
            if fresh["thumbNail"] == nil { old["thumbNail"] = nil }
        }
        return canonical(.object(old)) == canonical(.object(fresh))
    }

    /// Whole doubles as integers: jsonb prints 3.0 back as 3.0 or 3 depending on the writer.
    static func canonical(_ value: JSON) -> JSON {
        switch value {
        case .double(let number) where number.rounded() == number && abs(number) < 9e15: .int(Int64(number))
        case .array(let items): .array(items.map(canonical))
        case .object(let fields): .object(fields.mapValues(canonical))
        default: value
        }
    }
}
