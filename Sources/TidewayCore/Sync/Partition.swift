/// A partition string `key=value` of the protocol, parsed. Anything that is not one of
/// the four kinds is nil, and the caller answers `invalid`.
public struct Partition: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, CaseIterable {
        case agency, user, allUsers = "all-users", conversation

        /// The collections whose documents live in partitions of this kind.
        public var collections: [SyncCollection] {
            switch self {
            case .agency: [.reports, .photos, .dutyChanges, .menuData, .mpas]
            case .user: [.users]
            case .allUsers: [.chatsters]
            case .conversation: [.chatMessages]
            }
        }
    }

    public let kind: Kind
    public let value: String
    public var description: String { "\(kind.rawValue)=\(value)" }

    public init?(_ text: String) {
        guard let eq = text.firstIndex(of: "=") else { return nil }
        let key = String(text[..<eq])
        let value = String(text[text.index(after: eq)...])
        guard !value.isEmpty, !value.contains("=") else { return nil }
        switch key {
        case "agency":
            // Agency keys: letters, digits, space, `.`, `_`, `-`; 1–64 characters.
            guard value.count <= 64, value.trimmingCharacters(in: .whitespaces) == value,
                  value.allSatisfy({ $0.isLetter || $0.isNumber || " ._-".contains($0) })
            else { return nil }
            kind = .agency
        case "user":
            guard UUIDText.isCanonical(value) else { return nil }
            kind = .user
        case "all-users":
            guard value == "all-the-users" else { return nil }
            kind = .allUsers
        case "conversation":
            guard value.count <= 64, value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") })
            else { return nil }
            kind = .conversation
        default:
            return nil
        }
        self.value = value
    }

    public static func agency(_ key: String) -> String { "agency=\(key)" }
    public static func user(_ id: String) -> String { "user=\(id)" }
}

/// The collections of the protocol and the table each lives in.
public enum SyncCollection: String, Sendable, CaseIterable {
    case reports, photos, dutyChanges, menuData, mpas, users, chatsters, chatMessages

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
        }
    }

    public var partitionKind: Partition.Kind {
        switch self {
        case .reports, .photos, .dutyChanges, .menuData, .mpas: .agency
        case .users: .user
        case .chatsters: .allUsers
        case .chatMessages: .conversation
        }
    }
}

enum UUIDText {
    /// Lower-case 8-4-4-4-12 hex, as PostgreSQL prints a uuid.
    static func isCanonical(_ text: String) -> Bool {
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

import Foundation
