/// The Chat collections of docs/domain.md, after RChat.

/// `users` (partition `user=<id>`): the user's private document.
public struct ChatUser: Codable, Sendable, Hashable {
    public var _id: String
    public var userName: String
    public var displayName: String?
    /// `On-Line`, `Off-Line` or `Hidden`
    public var presence: String
    public var lastSeenAt: String?
    public var userPreferences: UserPreferences?
    public var conversations: [Conversation]?
}

public struct ChatPhoto: Codable, Sendable, Hashable {
    public var _id: String?
    public var thumbNail: String?
    public var picture: String?
    public var pictureURL: String?
    public var date: String?
}

public struct UserPreferences: Codable, Sendable, Hashable {
    public var displayName: String?
    public var avatarImage: ChatPhoto?
    public var shareLocation: Bool?
}

public struct Conversation: Codable, Sendable, Hashable {
    public var id: String
    public var displayName: String
    public var unreadCount: Int
    public var members: [Member]?
}

public struct Member: Codable, Sendable, Hashable {
    public var userId: String?
    public var userName: String?
    public var displayName: String?
    public var membershipStatus: String?
}

/// `chatsters` (partition `all-users=all-the-users`): every user's public profile, server-written.
public struct Chatster: Codable, Sendable, Hashable {
    public var _id: String
    public var userName: String?
    public var displayName: String?
    public var avatarThumbNail: String?
    public var presence: String?
    public var lastSeenAt: String?
}

/// `chatMessages` (partition `conversation=<id>`).
public struct ChatMessage: Codable, Sendable, Hashable {
    public var _id: String
    public var author: String?
    public var authorId: String?
    public var text: String
    public var image: ChatPhoto?
    public var location: [Double]?
    public var timestamp: String
    public var serverTimestamp: String?
    public init(_id: String, text: String, timestamp: String, author: String? = nil) {
        self._id = _id
        self.text = text
        self.timestamp = timestamp
        self.author = author
    }
}

/// The signed-in user as `/auth/login` answers it.
public struct AccountUser: Codable, Sendable, Hashable {
    public var id: String
    public var email: String
    public var displayName: String?
    public var agency: String?
    public var role: String
    public init(id: String, email: String, displayName: String?, agency: String?, role: String) {
        self.id = id
        self.email = email
        self.displayName = displayName
        self.agency = agency
        self.role = role
    }
}
