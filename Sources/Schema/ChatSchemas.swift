/// Chat collections (domain.md, after RChat). Who may change which field is decided elsewhere;
/// these only say what a well-formed document is.
enum ChatSchemas {
    static let all = [users, chatsters, chatMessages]

    static let presence: Schema = .oneOf(["On-Line", "Off-Line", "Hidden"])

    /// An embedded photo: thumbnail inline, the full picture only by URL (no inline `picture`
    /// in chat: only the `photos` collection's pictures are moved to the blob store).
    static let photo: Schema = .object([
        "_id": .optional(.identifier),
        "thumbNail": .optional(.base64(maxBytes: 64 * 1024)),
        "pictureURL": .optional(.string),
        "date": .optional(.date),
    ])

    static let users = CollectionSchema(
        name: "users",
        fields: [
            "userName": .required(.string),
            "displayName": .optional(.string),
            "presence": .required(presence),
            "lastSeenAt": .optional(.date),
            "userPreferences": .optional(.object([
                "displayName": .optional(.string),
                "avatarImage": .optional(photo),
                "shareLocation": .optional(.bool),
            ])),
            "conversations": .optional(.array(conversation)),
        ])

    static let conversation: Schema = .object([
        "id": .required(.identifier),
        "displayName": .required(.string),
        "unreadCount": .required(.nonNegativeInt),
        "members": .optional(.array(.object([
            "userId": .optional(.string),
            "userName": .optional(.string),
            "displayName": .optional(.string),
            "membershipStatus": .optional(.string),
        ]))),
    ])

    static let chatsters = CollectionSchema(
        name: "chatsters",
        fields: [
            "userName": .optional(.string),
            "displayName": .optional(.string),
            "avatarThumbNail": .optional(.base64(maxBytes: 64 * 1024)),
            "presence": .optional(presence),
            "lastSeenAt": .optional(.date),
        ])

    static let chatMessages = CollectionSchema(
        name: "chatMessages",
        fields: [
            "author": .optional(.string),
            "authorId": .optional(.string),
            "text": .required(.string),
            "image": .optional(photo),
            "location": .optional(.lonLat),
            "timestamp": .required(.date),
            "serverTimestamp": .optional(.date),
        ])
}
