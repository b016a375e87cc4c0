/// A user's own `users` document (domain.md): the server creates it with the account and
/// keeps `conversations` and the profile; the user owns `userPreferences` and may set
/// `presence` to `On-Line` or `Hidden`. Conversation edits are checked by the chat rules.
enum UserDocumentRules {
    static let userOwned: Set<String> = ["userPreferences", "presence", "conversations"]

    static func check(_ change: Change, current: JSON?, proposed: JSON?, caller: CallerInfo) throws(ChangeRejection) -> JSON? {
        guard let current else { throw .forbidden("a user's document is created by the server with the account") }
        guard let proposed, case .object(let new) = proposed, case .object(let old) = current else {
            throw .forbidden("a user's document cannot be deleted")
        }
        for key in Set(old.keys).union(new.keys) where !userOwned.contains(key) && old[key] != new[key] {
            throw .forbidden("\(key) is kept by the server")
        }
        if new["presence"] != old["presence"], let presence = new["presence"]?.stringValue,
           presence != "On-Line" && presence != "Hidden" {
            throw .forbidden("presence may be set to On-Line or Hidden only")
        }
        if new["conversations"] != old["conversations"] {
            try ConversationEditRules.check(old: old["conversations"], new: new["conversations"], caller: caller)
        }
        return proposed
    }
}

/// Until conversations are managed by the server (chat), a user may only reset unread counts.
enum ConversationEditRules {
    static func check(old: JSON?, new: JSON?, caller: CallerInfo) throws(ChangeRejection) {
        let before = old?.arrayValue ?? []
        let after = new?.arrayValue ?? []
        guard before.count == after.count else { throw .forbidden("conversations are changed through the chat API") }
        for (a, b) in zip(before, after) where a != b {
            guard case .object(var reset) = b, b["unreadCount"]?.intValue == 0 else {
                throw .forbidden("only unreadCount may be reset to 0")
            }
            reset["unreadCount"] = a["unreadCount"]
            guard JSON.object(reset) == a else { throw .forbidden("only unreadCount may be reset to 0") }
        }
    }
}
