import Testing

@testable import Sync
@testable import TidewayJSON

@Suite struct ConversationIntentTests {
    func conv(_ id: String, _ name: String, unread: Int64 = 0, members: [JSON] = []) -> JSON {
        ["id": .string(id), "displayName": .string(name), "unreadCount": .int(unread), "members": .array(members)]
    }

    @Test func readsEachKindOfEdit() throws {
        let old: JSON = [conv("a", "A", unread: 3, members: [["userId": "u1"]]), conv("b", "B", unread: 1)]
        let new: JSON = [conv("a", "A2", unread: 0, members: [["userId": "u1"], ["userName": "x@y"]]), conv("c", "C")]
        let intents = try ConversationIntents.read(old: old, new: new).map { $0["intent"]?.stringValue ?? "" }
        #expect(intents == ["rename", "addMembers", "resetUnread", "create", "leave"])
    }

    @Test func ignoresAStaleCount() throws {
        let old: JSON = [conv("a", "A", unread: 5)]
        let new: JSON = [conv("a", "A", unread: 3)]
        #expect(try ConversationIntents.read(old: old, new: new).isEmpty)
    }

    @Test func refusesDuplicatesAndMissingIds() {
        #expect(throws: ChangeRejection.self) { try ConversationIntents.read(old: [], new: [conv("a", "A"), conv("a", "A")]) }
        #expect(throws: ChangeRejection.self) { try ConversationIntents.read(old: [], new: [["displayName": "no id"]]) }
    }
}
