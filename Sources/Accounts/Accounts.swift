import Database
import Foundation
import Support
import Web

/// Creating accounts: the one function the CLI, the seed and the admin pages share. The
/// new user's `users` and `chatsters` documents come with it (a trigger, same transaction).
public enum Accounts {
    public struct NewUser: Sendable {
        public var email: String
        public var password: String?
        public var firstName: String
        public var lastName: String
        public var displayName: String
        public var agency: String?
        public var role: Role

        public init(email: String, password: String?, firstName: String, lastName: String,
                    displayName: String? = nil, agency: String?, role: Role) {
            self.email = email
            self.password = password
            self.firstName = firstName
            self.lastName = lastName
            self.displayName = displayName ?? "\(firstName) \(lastName)".trimmingCharacters(in: .whitespaces)
            self.agency = agency
            self.role = role
        }
    }

    /// Inserts the user, or (with `updateExisting`) brings an existing one with that email
    /// up to date: seeding twice must not fail. Returns the user's id.
    @discardableResult
    public static func create(_ user: NewUser, in tx: Transaction, updateExisting: Bool = false) throws -> String {
        let hash = user.password.map(Crypto.hashPassword)
        let conflict: SQL = updateExisting
            ? """
              on conflict (lower(email)) do update set first_name = excluded.first_name, last_name = excluded.last_name,
                display_name = excluded.display_name, agency = excluded.agency, role = excluded.role,
                password_hash = coalesce(excluded.password_hash, app.users.password_hash), active = true
              """
            : ""
        let result = try tx.query("""
            insert into app.users (email, password_hash, first_name, last_name, display_name, agency, role)
            values (\(user.email), \(hash), \(user.firstName), \(user.lastName), \(user.displayName), \(user.agency), \(user.role.rawValue))
            \(conflict)
            returning id
            """)
        guard let id = result.first?["id"] else { throw AppError(.internal, "user not created") }
        return id
    }

    /// Chat sign-up: no claims exist yet, so a narrow function of the database does the insert.
    public static func createSelfRegistered(_ user: NewUser, in tx: Transaction) throws -> String {
        let hash = Crypto.hashPassword(user.password ?? Crypto.newToken())
        let result = try tx.query("select app.register_user(\(user.email), \(hash), \(user.displayName)) as id")
        guard let id = result.first?["id"] else { throw AppError(.internal, "user not created") }
        return id
    }
}

