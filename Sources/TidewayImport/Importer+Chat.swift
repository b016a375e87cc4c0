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

/// RChat: conversations (from the users' documents) and chat messages (written by their
/// authors through the write path, so the server's rules and effects apply as for a send).
extension Importer {
    /// An RChat User's `conversations` (`[{id, displayName, unreadCount, members: [{userName}]}]`).
    func collectConversations(of doc: BSONValue, userName: String) {
        guard case .array(let list)? = doc["conversations"] else { return }
        for item in list {
            guard let id = Mapping.id(item["id"]) else { continue }
            var conversation = conversations[id] ?? Conversation(displayName: Mapping.json(item["displayName"] ?? .null).stringValue ?? "")
            if !conversation.members.contains(where: { $0.caseInsensitiveCompare(userName) == .orderedSame }) {
                conversation.members.append(userName)
            }
            if case .array(let members)? = item["members"] {
                for member in members {
                    guard case .string(let name)? = member["userName"], !name.isEmpty,
                          !conversation.members.contains(where: { $0.caseInsensitiveCompare(name) == .orderedSame }) else { continue }
                    conversation.members.append(name)
                }
            }
            if let unread = Mapping.json(item["unreadCount"] ?? .null).intValue {
                conversation.unread[userName.lowercased()] = unread
            }
            conversations[id] = conversation
        }
    }

    func account(_ email: String) throws -> (id: String, email: String)? {
        if accounts == nil {
            var all: [String: (id: String, email: String)] = [:]
            for row in try connection.execute("select id::text as id, email from app.users").rows {
                if let id = row["id"], let email = row["email"] { all[email.lowercased()] = (id, email) }
            }
            accounts = all
        }
        if let found = accounts?[email.lowercased()] { return found }
        if options.dryRun && wouldCreate.contains(email.lowercased()) { return ("dry-run", email) }
        return nil
    }

    /// Each conversation the users' documents name is created once, by its first member who
    /// has an account (the server's intent function, as when a user creates one), with every
    /// member who has an account.
    func ensureConversations() throws {
        guard !conversationsReady else { return }
        conversationsReady = true
        guard !conversations.isEmpty else { return }
        let name = "conversations (from User)"
        var counts = report.collections.first { $0.name == name }?.counts ?? ImportReport.Counts(target: "conversations")
        defer { report.set(name, counts) }
        let ids = conversations.keys.sorted()
        let existing = Set(try connection.execute("select id from app.conversations where id = any(\(ids)::text[])").rows.compactMap { $0["id"] })
        for id in ids {
            let conversation = conversations[id]!
            let source = "conversation \(id)"
            if existing.contains(id) {
                counts.skipped += 1
                continue
            }
            guard Partition("conversation=" + id) != nil else {
                counts.refuse(.init(path: "/conversations/-/id", reason: "not usable as a conversation id (1–64 letters, digits, _ or -)"), at: source)
                continue
            }
            var members: [(id: String, email: String)] = []
            for userName in conversation.members {
                if let found = try account(userName) { members.append(found) } else {
                    report.problems.append("\(source): member \(userName) has no account (not imported): left out")
                }
            }
            guard let creator = members.first else {
                counts.refuse(.init(path: "/conversations/-/members", reason: "no member has an account"), at: source)
                continue
            }
            if options.dryRun {
                counts.created += 1
                continue
            }
            let intent: JSON = ["intent": "create", "id": .string(id), "displayName": .string(conversation.displayName),
                                "members": .array(members.dropFirst().map { ["userName": .string($0.email)] })]
            do {
                try connection.transaction { tx in
                    _ = try tx.run(
                        Statement.effect("select set_config('tideway.user_id', \(creator.id), true), set_config('tideway.role', 'officer', true)"),
                        Statement.effect("select app.apply_conversation_intent(\(intent.serialized())::jsonb)"))
                }
                counts.created += 1
            } catch let error as DatabaseError {
                counts.refuse(.init(path: "/conversations/-", reason: "\(error)"), at: source)
            }
        }
    }

    struct Message {
        let source: Source
        let id: String
        let author: (id: String, email: String)
        let doc: JSON
        let timestamp: String
    }

    /// RChat's ChatMessage documents, per conversation in timestamp order.
    func importMessages(_ file: InputFile, counts: inout ImportReport.Counts,
                        seen: inout [String: Source], unreadable: (ReadError) -> Void) throws {
        var byConversation: [String: [Message]] = [:]
        try forEachReadable(file, unreadable: unreadable) { doc, source in
            guard let id = Self.claimID(of: source, in: .chatMessages, seen: &seen, counts: &counts) else { return }
            var partitionText: String?
            for key in ["partition", "_partition"] {
                if case .string(let text)? = doc[key] { partitionText = text }
            }
            guard let text = partitionText, let partition = Partition(text.hasPrefix("conversation=") ? text : "conversation=" + text),
                  partition.kind == .conversation else {
                counts.refuse(.init(path: "/partition", reason: "missing or not conversation=<id>"), at: source.text)
                return
            }
            guard case .string(let userName)? = doc["author"], let author = try account(userName) else {
                counts.refuse(.init(path: "/author", reason: "no account with this userName (import RChat's User collection with it)"),
                              at: source.text)
                return
            }
            guard var fields = Mapping.storedFields(of: doc, id: id) else { return }
            fields["author"] = .string(author.email)
            fields["authorId"] = .string(author.id)
            fields["serverTimestamp"] = nil
            switch Mapping.fit(.object(fields), collection: .chatMessages, strict: options.strict) {
            case .failure(let refusal):
                counts.refuse(refusal, at: source.text)
            case .success(let (fitted, adjustments)):
                for adjustment in adjustments { counts.adjusted[adjustment, default: 0] += 1 }
                byConversation[partition.value, default: []].append(
                    Message(source: source, id: id, author: author, doc: fitted, timestamp: fitted["timestamp"]?.stringValue ?? ""))
            }
        }
        for conversation in byConversation.keys.sorted() {
            // ISO 8601 in UTC sorts as text; the server numbers the messages in this order.
            let messages = byConversation[conversation]!.sorted { ($0.timestamp, $0.id) < ($1.timestamp, $1.id) }
            var start = 0
            while start < messages.count {
                let batch = Array(messages[start..<min(start + options.batchSize, messages.count)])
                start += batch.count
                try writeMessages(batch, conversation: conversation, counts: &counts)
            }
        }
    }

    private func writeMessages(_ messages: [Message], conversation: String, counts: inout ImportReport.Counts) throws {
        let partition = Partition("conversation=" + conversation)!
        let ids = messages.map(\.id)
        try connection.transaction { tx in
            let rows = try tx.query("""
                select id, partition, doc::text as doc, deleted from sync.chat_messages where id = any(\(ids)::text[]) order by id for update
                """).rows
            var stored: [String: (partition: String, doc: JSON?)] = [:]
            for row in rows {
                guard let id = row["id"] else { continue }
                stored[id] = (row["partition"] ?? "", row.bool("deleted") == true ? nil : try row["doc"].map { try JSON(parsing: $0) })
            }
            var runs: [[(Message, Bool)]] = []
            for message in messages {
                if let existing = stored[message.id] {
                    if existing.partition != partition.description {
                        counts.refuse(.init(path: "/_id", reason: "a message with this id exists in another conversation"), at: message.source.text)
                        continue
                    }
                    if case .object(var old)? = existing.doc {
                        old["serverTimestamp"] = nil
                        if Self.canonical(.object(old)) == Self.canonical(message.doc) {
                            counts.skipped += 1
                            continue
                        }
                    }
                }
                let isNew = stored[message.id]?.doc == nil
                if let last = runs.last?.last, last.0.author.id == message.author.id {
                    runs[runs.count - 1].append((message, isNew))
                } else {
                    runs.append([(message, isNew)])
                }
            }
            guard !options.dryRun else {
                for run in runs { for (_, isNew) in run { if isNew { counts.created += 1 } else { counts.updated += 1 } } }
                return
            }
            guard !runs.isEmpty else { return }
            _ = try tx.query("set local role tideway_worker")
            for run in runs {
                let author = run[0].0.author
                // The author's claims: the write path's rules check the author, the policies membership.
                _ = try tx.query("""
                    select set_config('tideway.user_id', \(author.id), true), set_config('tideway.role', 'officer', true),
                           set_config('tideway.agency', '', true), set_config('tideway.device', 'import', true)
                    """)
                let changes: [WritePath.Input] = run.map { message, _ in
                    .success(Change(changeID: "import:" + message.id, collection: .chatMessages, partition: partition,
                                    id: message.id, op: .insert, body: message.doc))
                }
                let results = try WritePath.apply(changes, clientID: nil, device: "import",
                                                  caller: .importer(userID: author.id, email: author.email), in: tx, limits: limits)
                for ((message, isNew), result) in zip(run, results) {
                    if result["status"]?.stringValue == "applied" {
                        if isNew { counts.created += 1 } else { counts.updated += 1 }
                        conversationsWritten.insert(conversation)
                    } else {
                        let error = result["error"]
                        counts.refuse(.init(path: error?["path"]?.stringValue ?? "/",
                                            reason: "\(error?["code"]?.stringValue ?? "rejected"): \(error?["message"]?.stringValue ?? "")"),
                                      at: message.source.text)
                    }
                }
            }
            _ = try tx.query("reset role")
        }
    }

    /// The imported messages counted as unread for everyone but their authors (the server's
    /// effect 4); a conversation that got messages in this run takes the unread counts its
    /// members' RChat documents had.
    func setUnreadCounts() throws {
        guard !options.dryRun else { return }
        for id in conversationsWritten.sorted() {
            guard let conversation = conversations[id], !conversation.unread.isEmpty else { continue }
            var members: [(String, Int64)] = []
            for (userName, unread) in conversation.unread {
                if let found = try account(userName) { members.append((found.id, unread)) }
            }
            guard !members.isEmpty else { continue }
            let userIDs = members.map(\.0), counts = members.map { String($0.1) }
            try connection.transaction { tx in
                _ = try tx.run(
                    Statement.effect("select app.lock_user_documents(\(userIDs)::uuid[])"),
                    Statement.effect("""
                        update app.conversation_members m set unread = t.n::int
                          from unnest(\(userIDs)::uuid[], \(counts)::text[]) as t(u, n)
                         where m.conversation_id = \(id) and m.user_id = t.u and m.active
                        """),
                    Statement.effect("select app.render_user_documents(\(userIDs)::uuid[])"))
            }
        }
    }
}
