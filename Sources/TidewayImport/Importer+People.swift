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

/// The agencies and the users of the Realm app: agencies by name, users with their role and
/// agency, and invitations (a link, or a mail) for those who need a password.
extension Importer {
    struct Actor {
        let id: String
        let email: String
    }

    func findActor() throws -> Actor? {
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

    func agencyKeys() throws -> Set<String> {
        Set(try connection.execute("select key from app.agencies").rows.compactMap { $0["key"] })
    }

    /// O-FISH `Agency` documents: the name is the key (it is what reports carry in `agency`).
    func importAgencies(_ output: BSONReader.Output, file: InputFile, counts: inout ImportReport.Counts,
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
    func importUsers(_ output: BSONReader.Output, file: InputFile, counts: inout ImportReport.Counts,
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
