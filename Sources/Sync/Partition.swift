import Foundation

/// A partition string `key=value` of the protocol, parsed. Anything that is not one of
/// the five kinds is nil, and the caller answers `invalid`. The grammar is the database's
/// `app.partition_kind` (Migrations/0002): PartitionGrammarTests holds the two to one
/// table of tricky strings.
public struct Partition: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, CaseIterable {
        case agency, user, allUsers = "all-users", conversation, team

        /// The collections whose documents live in partitions of this kind.
        public var collections: [SyncCollection] { SyncCollection.allCases.filter { $0.partitionKind == self } }
    }

    public let kind: Kind
    public let value: String
    public var description: String { "\(kind.rawValue)=\(value)" }

    public init?(_ text: String) {
        // Split on the bytes: a `=` followed by a combining mark is still the separator
        // there, as it is for the database's regular expressions.
        let utf8 = text.utf8
        guard let eq = utf8.firstIndex(of: 0x3D) else { return nil }
        let key = String(Substring(utf8[..<eq]))
        let value = String(Substring(utf8[utf8.index(after: eq)...]))
        guard !value.isEmpty, !value.utf8.contains(0x3D) else { return nil }
        switch key {
        case "agency":
            // Agency keys: 1–64 Latin letters (precomposed), digits 0–9, spaces, `.`, `_` or
            // `-`, neither starting nor ending with a space (app.partition_kind says why).
            let scalars = value.unicodeScalars
            guard scalars.count <= 64, scalars.first != " ", scalars.last != " ",
                  scalars.allSatisfy({ Self.isKeyScalar($0.value, extra: " ._-") || Self.isLatinLetter($0.value) })
            else { return nil }
            kind = .agency
        case "user":
            guard UUIDText.isCanonical(value) else { return nil }
            kind = .user
        case "all-users":
            guard value == "all-the-users" else { return nil }
            kind = .allUsers
        case "conversation":
            // Conversation ids: 1–64 ASCII letters, digits, `_` or `-`.
            guard value.unicodeScalars.count <= 64, value.unicodeScalars.allSatisfy({ Self.isKeyScalar($0.value, extra: "_-") })
            else { return nil }
            kind = .conversation
        case "team":
            // Team ids: a uuid as PostgreSQL prints it (app.teams, Migrations/0060).
            guard UUIDText.isCanonical(value) else { return nil }
            kind = .team
        default:
            return nil
        }
        self.value = value
    }

    /// ASCII letters and digits, and the ASCII characters of `extra`.
    private static func isKeyScalar(_ v: UInt32, extra: StaticString) -> Bool {
        (v >= 0x30 && v <= 0x39) || (v >= 0x41 && v <= 0x5A) || (v >= 0x61 && v <= 0x7A)
            || (v < 0x80 && UnsafeBufferPointer(start: extra.utf8Start, count: extra.utf8CodeUnitCount).contains(UInt8(v)))
    }

    /// The precomposed Latin letters beyond ASCII: U+00C0–U+024F but × and ÷, U+1E00–U+1EFF.
    private static func isLatinLetter(_ v: UInt32) -> Bool {
        (v >= 0xC0 && v <= 0x24F && v != 0xD7 && v != 0xF7) || (v >= 0x1E00 && v <= 0x1EFF)
    }

    public static func agency(_ key: String) -> String { "agency=\(key)" }
    public static func user(_ id: String) -> String { "user=\(id)" }
    public static func team(_ id: String) -> String { "team=\(id)" }
}

/// The collections of the protocol, the table each lives in and the kind of partition its
/// documents live in: the database's `app.collections` (Migrations/0004), from which the
/// per-table SQL is written. CollectionCatalogTests holds the two to the same rows.
public enum SyncCollection: String, Sendable, CaseIterable {
    case reports, photos, dutyChanges, menuData, mpas, agencyTasks, teamDirectory, users, chatsters, chatMessages, tasks, teamNotes

    public var table: String {
        switch self {
        case .reports: "reports"
        case .photos: "photos"
        case .dutyChanges: "duty_changes"
        case .menuData: "menu_data"
        case .mpas: "mpas"
        case .users: "users"
        case .chatsters: "chatsters"
        case .chatMessages: "chat_messages"
        case .agencyTasks: "agency_tasks"
        case .teamDirectory: "team_directory"
        case .tasks: "tasks"
        case .teamNotes: "team_notes"
        }
    }

    public var partitionKind: Partition.Kind {
        switch self {
        case .reports, .photos, .dutyChanges, .menuData, .mpas, .agencyTasks, .teamDirectory: .agency
        case .users: .user
        case .chatsters: .allUsers
        case .chatMessages: .conversation
        case .tasks, .teamNotes: .team
        }
    }

    /// Kept by the database alone (write rule `server` in `app.collections`): public chat
    /// profiles and the teams' directory. No client writes them, and the worker may not lock them.
    public var isWrittenByServer: Bool {
        switch self {
        case .chatsters, .teamDirectory: true
        default: false
        }
    }
}

package enum UUIDText {
    /// Lower-case 8-4-4-4-12 hex, as PostgreSQL prints a uuid.
    package static func isCanonical(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (i, b) in bytes.enumerated() {
            if [8, 13, 18, 23].contains(i) {
                if b != UInt8(ascii: "-") { return false }
            } else if !((b >= 48 && b <= 57) || (b >= 97 && b <= 102)) {
                return false
            }
        }
        return true
    }
}

