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
                var previous = 0.0
                do {
                    try file.forEachDocument { index, fraction, result in
                        progress.advance(1, bytes: Int(Double(fileBytes) * (fraction - previous)), label: file.collection)
                        previous = fraction
                        guard case .success(let doc) = result else {
                            if case .failure(let error) = result { unreadable(error) }
                            return
                        }
                        let source = Source(file: file.path, index: index, id: Mapping.id(doc["_id"]))
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
                } catch let error as ImportError {
                    report.problems.append(error.description)
                }
            case .chatMessages:
                try ensureConversations()
                try importMessages(file, fileBytes: fileBytes, counts: &counts, seen: &seen, unreadable: unreadable)
            case .documents(let collection):
                var batch: [String: [Pending]] = [:]
                var previous = 0.0
                do {
                    try file.forEachDocument { index, fraction, result in
                        progress.advance(1, bytes: Int(Double(fileBytes) * (fraction - previous)), label: file.collection)
                        previous = fraction
                        let doc: BSONValue
                        switch result {
                        case .failure(let error):
                            unreadable(error)
                            return
                        case .success(let value):
                            doc = value
                        }
                        let source = Source(file: file.path, index: index, id: Mapping.id(doc["_id"]))
                        guard let id = source.id else {
                            counts.refuse(.init(path: "/_id", reason: "missing, or not an ObjectId, string or number"), at: source.text)
                            return
                        }
                        let key = collection.rawValue + "/" + id
                        if let first = seen[key] {
                            counts.refuse(.init(path: "/_id", reason: "duplicate _id (the first one, \(first.text), is imported)"),
                                          at: source.text)
                            return
                        }
                        seen[key] = source
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
                        guard case .object(var fields) = Mapping.json(doc) else { return }
                        for name in Mapping.partitionFields { fields[name] = nil }
                        fields["_id"] = .string(id)
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
                } catch let error as ImportError {
                    report.problems.append(error.description)
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

    // MARK: agencies and people

    struct Actor {
        let id: String
        let email: String
    }

    private func findActor() throws -> Actor? {
        let rows: QueryResult
        if let email = options.actorEmail {
            rows = try connection.execute("""
                select id::text, email from app.users where lower(email) = lower(\(email)) and role = 'globalAdmin' and active
                """)
            guard !rows.isEmpty else { throw ImportError("--actor \(email): no active global admin with that email") }
        } else {
            rows = try connection.execute("""
                select id::text, email from app.users where role = 'globalAdmin' and active order by created_at, id limit 1
                """)
        }
        guard let row = rows.first, let id = row["id"], let email = row["email"] else {
            if options.dryRun { return nil }
            throw ImportError("no global admin to record the import under: create one first "
                + "(tideway create-user --role globalAdmin) or pass --actor")
        }
        return Actor(id: id, email: email)
    }

    private func agencyKeys() throws -> Set<String> {
        Set(try connection.execute("select key from app.agencies").rows.compactMap { $0["key"] })
    }

    /// O-FISH `Agency` documents: the name is the key (it is what reports carry in `agency`).
    private func importAgencies(_ output: BSONReader.Output, file: InputFile, counts: inout ImportReport.Counts,
                                known: inout Set<String>) throws {
        let existing = try connection.execute("select key, description, email, site, active from app.agencies").rows
        var byKey: [String: Row] = [:]
        for row in existing { if let key = row["key"] { byKey[key] = row } }
        var createdNow: Set<String> = []
        try connection.transaction { tx in
            for (index, doc) in output.documents {
                let source = Source(file: file.path, index: index, id: Mapping.id(doc["_id"]))
                guard case .string(let name)? = doc["name"], Partition(Partition.agency(name)) != nil else {
                    counts.refuse(.init(path: "/name", reason: "missing, or not usable as an agency key (docs/domain.md)"), at: source.text)
                    continue
                }
                func text(_ key: String) -> String { Mapping.json(doc[key] ?? .null).stringValue ?? "" }
                let active = doc["active"].map { $0 != .bool(false) } ?? true
                if createdNow.contains(name) {
                    counts.refuse(.init(path: "/name", reason: "duplicate agency name in the import"), at: source.text)
                    continue
                }
                if let row = byKey[name] {
                    if row["description"] == text("description") && row["email"] == text("email") && row["site"] == text("site")
                        && row.bool("active") == active {
                        counts.skipped += 1
                    } else {
                        if !options.dryRun {
                            _ = try tx.query("""
                                update app.agencies set description = \(text("description")), email = \(text("email")),
                                       site = \(text("site")), active = \(active) where key = \(name)
                                """)
                        }
                        counts.updated += 1
                    }
                    continue
                }
                if !options.dryRun {
                    _ = try tx.query("""
                        insert into app.agencies (key, name, description, email, site, active)
                        values (\(name), \(name), \(text("description")), \(text("email")), \(text("site")), \(active))
                        """)
                }
                createdNow.insert(name)
                known.insert(name)
                counts.created += 1
            }
        }
    }

    /// O-FISH and RChat `User` documents become accounts without a password, each with a
    /// one-time invitation link (the back office's mechanism, 72 hours) for an admin to hand
    /// over. An account that exists (same email) is left as it is.
    private func importUsers(_ output: BSONReader.Output, file: InputFile, counts: inout ImportReport.Counts,
                             known: Set<String>, actor: Actor?) throws {
        self.accounts = nil  // read again when messages need them
        let emails = Set(try connection.execute("select lower(email) as email from app.users").rows.compactMap { $0["email"] })
        var seenEmails: Set<String> = []
        var accounts: [(Source, Accounts.NewUser, active: Bool)] = []
        for (index, doc) in output.documents {
            let source = Source(file: file.path, index: index, id: Mapping.id(doc["_id"]))
            let emailValue = doc["email"] ?? doc["userName"]
            guard case .string(let rawEmail)? = emailValue, rawEmail.split(separator: "@").count == 2, rawEmail.count <= 254,
                  !rawEmail.unicodeScalars.contains(where: { $0.properties.isWhitespace }) else {
                counts.refuse(.init(path: doc["email"] != nil ? "/email" : "/userName", reason: "missing or not an email address"), at: source.text)
                continue
            }
            let email = rawEmail
            collectConversations(of: doc, userName: email)
            guard seenEmails.insert(email.lowercased()).inserted else {
                counts.refuse(.init(path: "/email", reason: "duplicate email in the import"), at: source.text)
                continue
            }
            if emails.contains(email.lowercased()) {
                counts.skipped += 1
                continue
            }
            // O-FISH: `agency.name`; RChat's users belong to no agency (their `partition` is user=…).
            let agency: String? = switch doc["agency"] {
            case .string(let name)? where !name.isEmpty: name
            case .document? : Mapping.agency(of: doc)
            default: nil
            }
            let role: Role
            if doc["global"]?["admin"] == .bool(true) {
                role = .globalAdmin
            } else if doc["agency"]?["admin"] == .bool(true) {
                role = .agencyAdmin
            } else {
                role = .officer
            }
            if let agency, !known.contains(agency) {
                counts.refuse(.init(path: "/agency/name", reason: "no such agency (import its Agency document or create it first)"), at: source.text)
                continue
            }
            if role == .agencyAdmin && agency == nil {
                counts.refuse(.init(path: "/agency", reason: "an agency admin needs an agency"), at: source.text)
                continue
            }
            func text(_ value: BSONValue?) -> String { value.flatMap { Mapping.json($0).stringValue } ?? "" }
            let display = text(doc["displayName"] ?? doc["userPreferences"]?["displayName"])
            accounts.append((source, Accounts.NewUser(
                email: email, password: nil, firstName: String(text(doc["name"]?["first"]).prefix(100)),
                lastName: String(text(doc["name"]?["last"]).prefix(100)), displayName: String(display.prefix(100)),
                agency: agency, role: role), doc["active"] != .bool(false)))
        }
        guard !options.dryRun else {
            counts.created += accounts.count
            wouldCreate.formUnion(accounts.map { $0.1.email.lowercased() })
            return
        }
        var start = 0
        while start < accounts.count {
            let slice = accounts[start..<min(start + 200, accounts.count)]
            start += slice.count
            // Links are issued as the recording global admin, through the same function as the
            // back office's invitations (it checks that the issuer may manage the user).
            let links = try connection.transaction { tx -> [(String, String, String)] in
                if let actor {
                    _ = try tx.query("""
                        select set_config('tideway.user_id', \(actor.id), true), set_config('tideway.role', 'globalAdmin', true)
                        """)
                }
                var links: [(String, String, String)] = []
                for (_, account, active) in slice {
                    let id = try Accounts.create(account, in: tx)
                    guard active else {
                        // A deactivated O-FISH user stays deactivated here, and gets no link.
                        _ = try tx.query("update app.users set active = false where id = \(id)::uuid")
                        continue
                    }
                    let token = Crypto.newToken()
                    _ = try tx.query("select app.issue_account_link(\(id)::uuid, 'invite', \(Tokens.hash(token)), \(72 * 3600))")
                    let name = "\(account.firstName) \(account.lastName)".trimmingCharacters(in: .whitespaces)
                    links.append((account.email, Self.trimmed(options.publicURL) + "/invite/" + token, name))
                }
                return links
            }
            counts.created += slice.count
            // After the commit, as in the back office: a mail never announces an account
            // that a rollback took back.
            let mailer = options.mail.map(Mailer.init(settings:))
            for (email, link, name) in links {
                var mail = "not mailed (no relay configured)"
                if let mailer {
                    if let message = ImportInvitationMail.message(link: link, email: email, name: name, settings: mailer.settings,
                                                                  site: Self.trimmed(options.publicURL)) {
                        mail = mailer.send(message).map { "mail failed: \($0)" } ?? "mailed"
                    } else {
                        mail = "mail failed: the address cannot be used in a mail"
                    }
                }
                report.invitations.append(ImportReport.Invitation(email: email, link: link, mail: mail))
            }
        }
    }

    static func trimmed(_ url: String) -> String {
        var url = url
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }
}

/// Documents per second and the time left (from the share of the files' bytes read), on
/// standard error, at most once a second.
struct Progress {
    let enabled: Bool
    var totalBytes = 0
    var doneBytes = 0
    var done = 0
    let started = Date()
    var lastPrint = Date.distantPast
    var printed = false

    init(enabled: Bool) { self.enabled = enabled }

    mutating func advance(_ count: Int, bytes: Int, label: String) {
        done += count
        doneBytes += max(0, bytes)
        guard enabled, Date().timeIntervalSince(lastPrint) >= 1 else { return }
        lastPrint = Date()
        let elapsed = max(Date().timeIntervalSince(started), 0.001)
        let rate = Double(done) / elapsed
        let share = totalBytes > 0 ? min(1, Double(doneBytes) / Double(totalBytes)) : 1
        let eta = share > 0 ? elapsed * (1 - share) / share : 0
        let line = String(format: "import: %@: %d documents, %.0f%%, %.0f docs/s, ETA %d:%02d", label, done, share * 100, rate,
                          Int(eta) / 60, Int(eta) % 60)
        FileHandle.standardError.write(Data(("\r" + line + "    ").utf8))
        printed = true
    }

    mutating func finish() {
        if printed { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}
