import TidewayJSON
import Web

/// A demo login. The password (the same for all) is set where users are created.
public struct DemoUser: Sendable, Equatable {
    public enum Role: String, Sendable, Equatable, CaseIterable {
        case officer, agencyAdmin, globalAdmin
    }

    public struct Name: Sendable, Equatable {
        public var first: String
        public var last: String
    }

    public var email: String
    public var name: Name
    public var displayName: String
    /// The agency's key; nil for the global admin.
    public var agencyKey: String?
    public var role: Role

    /// The `{name {first, last}, email}` object that reports and duty changes embed.
    public var reference: JSON {
        ["name": ["first": .string(name.first), "last": .string(name.last)], "email": .string(email)]
    }
}

/// The demo logins: `admin@demo.tideway`, and per agency `<slug>.admin`, `<slug>.officer1`
/// and `<slug>.officer2` at `demo.tideway`.
public enum DemoUsers {
    public static let emailDomain = "demo.tideway"
    public static let globalAdminEmail = "admin@demo.tideway"

    /// Global admin first, then per agency its admin and two officers, in agency order.
    public static func all(agencies: [DemoAgency]) -> [DemoUser] {
        // The global admin belongs to no agency: it reads every agency and writes boardings of none.
        var users = [user(globalAdminEmail, ("Ada", "Admin"), nil, .globalAdmin)]
        for agency in agencies {
            let slug = slug(agency.key)
            let names = peopleBySlug[slug] ?? fallbackPeople(slug)
            users.append(user("\(slug).admin@\(emailDomain)", names[0], agency.key, .agencyAdmin))
            users.append(user("\(slug).officer1@\(emailDomain)", names[1], agency.key, .officer))
            users.append(user("\(slug).officer2@\(emailDomain)", names[2], agency.key, .officer))
        }
        return users
    }

    public static func officers(ofAgency key: String, in users: [DemoUser]) -> [DemoUser] {
        users.filter { $0.agencyKey == key && $0.role == .officer }
    }

    /// The agency key lower-cased with accents, spaces and punctuation removed:
    /// `Parque Nacional Galápagos` → `parquenacionalgalapagos`. Made from the key, not the
    /// display name, so that renaming an agency never changes its users' emails.
    public static func slug(_ agencyKey: String) -> String {
        let scalars = agencyKey.lowercased().decomposedStringWithCanonicalMapping.unicodeScalars
        return String(String.UnicodeScalarView(scalars.filter { $0.isASCII && ($0.properties.isAlphabetic || $0.properties.numericType != nil) }))
    }

    private static func user(_ email: String, _ name: (String, String), _ agency: String?, _ role: DemoUser.Role) -> DemoUser {
        DemoUser(email: email, name: .init(first: name.0, last: name.1), displayName: "\(name.0) \(name.1)", agencyKey: agency, role: role)
    }

    /// Admin, officer 1, officer 2 of each sample agency, with names usual where it works.
    private static let peopleBySlug: [String: [(String, String)]] = [
        "wildaid": [("Meredith", "Collins"), ("Daniel", "Okafor"), ("Priya", "Raman")],
        "gabon": [("Sylvie", "Moussavou"), ("Landry", "Ndong"), ("Brice", "Obiang")],
        "parquenacionalgalapagos": [("María José", "Cevallos"), ("Jorge", "Villacís"), ("Andrea", "Chalén")],
        "ecuadoriangalapagos": [("Diego", "Andrade"), ("Paola", "Guerrero"), ("Luis", "Zambrano")],
    ]

    /// Names for agencies added later: a stable choice from a pool, by the slug's hash.
    private static func fallbackPeople(_ slug: String) -> [(String, String)] {
        let pool: [(String, String)] = [
            ("Ana", "Ferreira"), ("Tomás", "Reyes"), ("Grace", "Mensah"), ("Kenji", "Sato"), ("Lena", "Hofmann"),
            ("Samuel", "Otieno"), ("Isabel", "Duarte"), ("Noah", "Kaleo"), ("Fatou", "Diop"), ("Marco", "Bianchi"),
        ]
        let start = Int(DemoRandom.fnv1a(slug) % UInt64(pool.count))
        return (0..<3).map { pool[(start + $0 * 3) % pool.count] }
    }
}
