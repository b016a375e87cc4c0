import Testing

@testable import TidewayCore

@Suite struct CursorTests {
    let key = Array(repeating: UInt8(7), count: 32)

    @Test func roundTrips() {
        let cursor = Cursor(seq: 123_456_789, collection: "reports", id: "64b0c0ffee")
        let text = cursor.encode(partition: "agency=Gabon", key: key)
        #expect(text.hasPrefix("c:"))
        #expect(Cursor.decode(text, partition: "agency=Gabon", key: key) == cursor)
        #expect(Cursor.decode(Cursor.after(9).encode(partition: "p=1", key: key), partition: "p=1", key: key) == .after(9))
    }

    @Test func refusesForgedForeignAndGarbage() {
        let text = Cursor(seq: 5).encode(partition: "agency=Gabon", key: key)
        #expect(Cursor.decode(text, partition: "agency=WildAid", key: key) == nil)
        #expect(Cursor.decode(text, partition: "agency=Gabon", key: Array(repeating: 8, count: 32)) == nil)
        var bytes = Array(text.utf8)
        bytes[6] = bytes[6] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(Cursor.decode(String(decoding: bytes, as: UTF8.self), partition: "agency=Gabon", key: key) == nil)
        for garbage in ["", "c:", "c:!!!", "x:" + text.dropFirst(2), String(repeating: "c:AAAA", count: 200)] {
            #expect(Cursor.decode(garbage, partition: "agency=Gabon", key: key) == nil)
        }
    }
}

@Suite struct PartitionTests {
    @Test func parsesTheFourKinds() {
        #expect(Partition("agency=Parque Nacional Galápagos")?.kind == .agency)
        #expect(Partition("user=5f1c0000-0000-4000-8000-000000000001")?.kind == .user)
        #expect(Partition("all-users=all-the-users")?.kind == .allUsers)
        #expect(Partition("conversation=6d2f0c1e-3b7a")?.kind == .conversation)
    }

    @Test func refusesWhatIsNotAPartition() {
        for text in ["agency=", "user=a=b", "foo", "foo=bar", "=x", "agency= Gabon", "user=not-a-uuid",
                     "user=5F1C0000-0000-4000-8000-000000000001", "all-users=everyone", "conversation=a/b",
                     "agency=" + String(repeating: "x", count: 65)] {
            #expect(Partition(text) == nil, "\(text)")
        }
    }

    @Test func collectionsLiveInOneKindOfPartition() {
        for collection in SyncCollection.allCases {
            #expect(collection.partitionKind.collections.contains(collection))
        }
    }
}

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

@Suite struct WebUnitTests {
    @Test func formDecoding() {
        let parsed = FormData.parse("a=1&b=x+y&c=%C3%A1%2F&a=2&empty=&flag")
        #expect(parsed.last["a"] == "2" && parsed.all["a"] == ["1", "2"])
        #expect(parsed.last["b"] == "x y" && parsed.last["c"] == "á/" && parsed.last["empty"] == "" && parsed.last["flag"] == "")
        #expect(FormData.encode("/boardings?q=á b") == "%2Fboardings%3Fq%3D%C3%A1%20b")
    }

    @Test func routerMatchesAndSaysWhichMethods() {
        var router = Router()
        router.get("/boardings/:id", { _ in .init(status: 200) })
        router.post("/boardings/:id", { _ in .init(status: 201) })
        guard case .found(_, let params) = router.match(method: "GET", path: "/boardings/42") else {
            Issue.record("no match")
            return
        }
        #expect(params["id"] == "42")
        guard case .wrongMethod(let allowed) = router.match(method: "DELETE", path: "/boardings/42") else {
            Issue.record("expected 405")
            return
        }
        #expect(allowed == ["GET", "POST"])
        if case .none = router.match(method: "GET", path: "/nope") {} else { Issue.record("expected 404") }
    }

    @Test func nextNeverLeavesTheSite() {
        #expect(LoginPages.safeNext("/boardings?x=1") == "/boardings?x=1")
        for bad in ["//evil.example", "https://evil.example", "/\\evil", "evil", nil, "/\r\nSet-Cookie: x=1", "/\n",
                    "/\t/evil.example", "/\u{0}x", "/ x", "/\u{7F}"] as [String?] {
            #expect(LoginPages.safeNext(bad) == "/")
        }
    }

    @Test func cookieFlags() {
        let (name, value) = Cookies.set("tw_session", "abc", maxAge: 60)
        #expect(name == "Set-Cookie")
        for flag in ["HttpOnly", "Secure", "SameSite=Lax", "Path=/", "Max-Age=60"] { #expect(value.contains(flag)) }
    }
}
