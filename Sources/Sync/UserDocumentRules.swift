import TidewayJSON
import Web

/// A user's own `users` document (domain.md): the server creates it with the account and
/// keeps the profile fields; the user owns `userPreferences`, may set `presence` to
/// `On-Line` or `Hidden`, and edits `conversations` only in the ways ConversationIntents reads.
enum UserDocumentRules {
    static let userOwned: Set<String> = ["userPreferences", "presence", "conversations"]

    static func check(_ change: Change, current: JSON?, proposed: JSON?, caller: CallerInfo) throws(ChangeRejection) -> Prepared {
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
        let intents = try ConversationIntents.read(old: old["conversations"], new: new["conversations"])
        // The stored `conversations` is the server's rendering (a trigger), whatever was sent.
        var stored = new
        stored["conversations"] = old["conversations"]
        return Prepared(document: .object(stored), intents: intents)
    }
}

/// Reads what a user did to their copy of `conversations` as intents for the server:
/// a new entry creates a conversation, a removed one leaves it, a new name renames it,
/// new members are added, and an unread count set to 0 resets it. Other differences are
/// the client's stale view (counts that grew meanwhile) and are ignored, so that a reset
/// and an increment never undo each other.
enum ConversationIntents {
    static func read(old: JSON?, new: JSON?) throws(ChangeRejection) -> [JSON] {
        guard let after = new?.arrayValue ?? (new == nil ? [] : nil) else {
            throw .invalid("conversations must be an array", path: "/conversations")
        }
        let before = old?.arrayValue ?? []
        var previous: [String: JSON] = [:]
        for entry in before { if let id = entry["id"]?.stringValue { previous[id] = entry } }
        var intents: [JSON] = []
        var listed: Set<String> = []
        for (index, entry) in after.enumerated() {
            guard let id = entry["id"]?.stringValue else {
                throw .invalid("a conversation needs an id", path: "/conversations/\(index)/id")
            }
            guard listed.insert(id).inserted else {
                throw .invalid("conversation \(id) is listed twice", path: "/conversations/\(index)")
            }
            let members = entry["members"]?.arrayValue ?? []
            guard let known = previous[id] else {
                intents.append(["intent": "create", "id": .string(id), "displayName": entry["displayName"] ?? .null,
                                "members": .array(members)])
                continue
            }
            if let name = entry["displayName"], name != known["displayName"] {
                intents.append(["intent": "rename", "id": .string(id), "displayName": name])
            }
            let knownMembers = Set((known["members"]?.arrayValue ?? []).flatMap { [$0["userId"], $0["userName"]] }.compactMap { $0?.stringValue })
            let added = members.filter { member in
                ![member["userId"], member["userName"]].compactMap({ $0?.stringValue }).contains(where: knownMembers.contains)
            }
            if !added.isEmpty {
                intents.append(["intent": "addMembers", "id": .string(id), "members": .array(added)])
            }
            if entry["unreadCount"]?.intValue == 0, known["unreadCount"]?.intValue != 0 {
                intents.append(["intent": "resetUnread", "id": .string(id)])
            }
        }
        for id in previous.keys.sorted() where !listed.contains(id) {
            intents.append(["intent": "leave", "id": .string(id)])
        }
        return intents
    }
}
