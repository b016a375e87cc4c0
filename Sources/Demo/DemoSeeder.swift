import Accounts
import Database
import Foundation
import Support
import Sync
import TidewayJSON
import Web

/// Loads the demo agencies, logins, menu lists, protected areas, boarding reports and duty
/// changes. Idempotent: fixed ids and seeds, so a second run changes nothing. Runs as the
/// database administrator (it creates what no user could create alone).
public struct DemoSeeder {
    public static let password = "tideway-demo"
    public static let seed: UInt64 = 20_240_601

    let connection: Connection
    let dataDirectory: String
    /// Reports are dated relative to this instant; fixed per database so that re-seeding matches.
    let now: Date

    public init(connection: Connection, dataDirectory: String, now: Date = Date()) {
        self.connection = connection
        self.dataDirectory = dataDirectory
        self.now = now
    }

    public func seed(reportsPerAgency: Int) throws -> String {
        let sample = try DemoAgencies(dataDirectory: URL(fileURLWithPath: dataDirectory + "/ofish"))
        let users = DemoUsers.all(agencies: sample.agencies)
        let anchor = try seedAnchor()
        try connection.transaction { tx in
            for agency in sample.agencies {
                _ = try tx.query("""
                    insert into app.agencies (key, name, description, email, site, active)
                    values (\(agency.key), \(agency.name), \(agency.description), \(agency.email), \(agency.site), \(agency.active))
                    on conflict (key) do nothing
                    """)
            }
            for user in users {
                guard let role = Role(rawValue: user.role.rawValue) else { continue }
                let account = Accounts.NewUser(
                    email: user.email, password: nil, firstName: user.name.first, lastName: user.name.last,
                    displayName: user.displayName, agency: user.agencyKey, role: role)
                try Accounts.create(account, in: tx, updateExisting: true)
            }
            // One hash for all demo logins: argon2id is slow by design.
            _ = try tx.query("""
                update app.users set password_hash = \(Crypto.hashPassword(Self.password))
                 where email like '%@demo.tideway' and password_hash is null
                """)
        }
        var documents = 0
        for agency in sample.agencies {
            let partition = "agency=" + agency.key
            documents += try insert([sample.menuDataDocument(for: agency.key)], into: "menu_data", partition: partition)
            documents += try insert(sample.mpas(for: agency.key).map(\.document), into: "mpas", partition: partition)
            let officers = DemoUsers.officers(ofAgency: agency.key, in: users)
            guard !officers.isEmpty else { continue }
            let agencySeed = Self.seed &+ UInt64(truncatingIfNeeded: agency.key.hashValueStable)
            var generator = ReportGenerator(seed: agencySeed, agency: agency, menu: sample.menu(for: agency.key), officers: officers, now: anchor)
            var remaining = reportsPerAgency
            while remaining > 0 {
                let batch = (0..<min(remaining, 500)).compactMap { _ in generator.next() }
                documents += try insert(batch, into: "reports", partition: partition)
                remaining -= batch.count
            }
            let duty = DutyChangeGenerator(seed: agencySeed, officers: officers, now: anchor).changes()
            documents += try insert(duty, into: "duty_changes", partition: partition)
        }
        let chats = try seedConversations(DemoConversations.all(users: users, now: anchor))
        let teams = try DemoTeams(connection: connection).seed(agencyKeys: sample.agencies.map(\.key), now: Timestamp.string(anchor))
        return "demo data: \(sample.agencies.count) agencies, \(chats) new conversations, \(teams) new teams, \(users.count) logins (password \(Self.password)), \(documents) new documents"
    }

    /// Conversations are created the way a user creates one (the same intent function, as
    /// their first member), and messages are inserted so that the unread counts follow.
    private func seedConversations(_ conversations: [DemoConversation]) throws -> Int {
        var created = 0
        for conversation in conversations {
            let exists = try connection.execute("select 1 from app.conversations where id = \(conversation.id)")
            guard exists.isEmpty, let creator = conversation.memberEmails.first else { continue }
            try connection.transaction { tx in
                let ids = try tx.query("select id::text, email from app.users where email = any(\(conversation.memberEmails)::text[])")
                var idOf: [String: String] = [:]
                for row in ids.rows { if let id = row["id"], let email = row["email"] { idOf[email] = id } }
                guard let creatorID = idOf[creator] else { return }
                let members = JSON.array(conversation.memberEmails.dropFirst().map { ["userName": .string($0)] })
                let intent: JSON = ["intent": "create", "id": .string(conversation.id),
                                    "displayName": .string(conversation.displayName), "members": members]
                _ = try tx.query("select set_config('tideway.user_id', \(creatorID), true)")
                _ = try tx.query("select app.apply_conversation_intent(\(intent.serialized())::jsonb)")
                let partition = "conversation=" + conversation.id
                for (index, message) in conversation.messages.enumerated() {
                    guard let authorID = idOf[message.authorEmail] else { continue }
                    let stamp = Timestamp.string(message.timestamp)
                    let doc: JSON = ["_id": .string("\(conversation.id)-\(index)"), "text": .string(message.text),
                                     "author": .string(message.authorEmail), "authorId": .string(authorID),
                                     "timestamp": .string(stamp), "serverTimestamp": .string(stamp)]
                    _ = try tx.query("""
                        insert into sync.chat_messages (id, partition, doc, seq, updated_by)
                        values (\(conversation.id + "-\(index)"), \(partition), \(doc.serialized())::jsonb, app.tick(\(partition)), \(authorID)::uuid)
                        """)
                }
            }
            created += 1
        }
        return created
    }

    /// The first seed's time, remembered, so that later runs generate the same reports.
    private func seedAnchor() throws -> Date {
        let stamp = ISO8601DateFormatter().string(from: now)
        _ = try connection.execute("insert into app.settings (key, value) values ('demo_anchor', \(stamp)) on conflict (key) do nothing")
        let stored = try connection.execute("select value from app.settings where key = 'demo_anchor'").first?["value"]
        return stored.flatMap { ISO8601DateFormatter().date(from: $0) } ?? now
    }

    /// Inserts documents that are not there yet, as one batch of one partition.
    private func insert(_ docs: [JSON], into table: String, partition: String) throws -> Int {
        guard !docs.isEmpty else { return 0 }
        let array = JSON.array(docs).serialized()
        return try connection.transaction { tx in
            try tx.query("""
                with clock as (select app.tick(\(partition)) as seq)
                insert into sync.\(unsafeSQL: table) (id, partition, doc, seq)
                select d->>'_id', \(partition), d, clock.seq from jsonb_array_elements(\(array)::jsonb) d, clock
                on conflict (id) do nothing
                """).affected
        }
    }
}

extension String {
    /// A hash that is the same in every process (Swift's `hashValue` is seeded per run).
    var hashValueStable: UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }
}
