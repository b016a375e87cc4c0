import ArgumentParser
import Foundation
import TidewayClient
import TidewayModels

/// RChat on the command line: conversations live in the user's own `users` document, messages
/// in `conversation=<id>` partitions, profiles (presence) in `all-users=all-the-users`.
struct ChatCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chat", abstract: "Chat as an RChat user.",
        subcommands: [Create.self, Send.self, Read.self, ChatSync.self, Show.self])

    static func me(_ client: TidewayClient) throws -> (AccountUser, JSONValue) {
        guard let user = client.user else { throw TidewayError.signedOut }
        guard let doc = try client.store.document("users", user.id)?.doc else {
            throw TidewayError.local("no users document yet: open and sync first")
        }
        return (user, doc)
    }

    /// Opens the partition of every conversation the user is in (after a pull brought them).
    static func openConversations(_ client: TidewayClient) throws -> Bool {
        guard let (_, doc) = try? me(client) else { return false }
        let open = Set(try client.store.partitions().map(\.partition))
        var opened = false
        for conversation in doc["conversations"]?.arrayValue ?? [] {
            if let id = conversation["id"]?.stringValue, !open.contains("conversation=" + id) {
                try client.open(partition: "conversation=" + id)
                opened = true
            }
        }
        return opened
    }

    struct Create: ParsableCommand {
        @OptionGroup var global: Global
        @Argument var name: String
        @Option(help: "A member's e-mail (repeat).") var member: [String] = []

        func run() throws {
            do {
                let client = try global.client()
                let id = "c-" + RandomReport.objectId()
                let (user, _) = try me(client)
                try client.store.modify("users", user.id) { doc in
                    var conversations = doc["conversations"]?.arrayValue ?? []
                    conversations.append(["id": .string(id), "displayName": .string(name), "unreadCount": 0,
                                          "members": .array(member.map { ["userName": .string($0)] })])
                    doc = MergePatch.apply(["conversations": .array(conversations)], to: doc)
                }
                try client.open(partition: "conversation=" + id)
                emit(["conversation": .string(id)])
            } catch { throw fail(error) }
        }
    }

    struct Send: ParsableCommand {
        @OptionGroup var global: Global
        @Argument var conversation: String
        @Argument var text: String

        func run() throws {
            do {
                let client = try global.client()
                let clock = ISO8601DateFormatter()
                clock.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                let message = ChatMessage(_id: RandomReport.objectId(), text: text, timestamp: clock.string(from: Date()))
                try client.open(partition: "conversation=" + conversation)
                try client.store.insert(JSONValue.from(message), collection: "chatMessages",
                                        partition: "conversation=" + conversation)
                emit(["message": .string(message._id)])
            } catch { throw fail(error) }
        }
    }

    struct Read: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Mark a conversation read (its unread count to 0).")
        @OptionGroup var global: Global
        @Argument var conversation: String

        func run() throws {
            do {
                let client = try global.client()
                let (user, _) = try me(client)
                try client.store.modify("users", user.id) { doc in
                    let conversations = (doc["conversations"]?.arrayValue ?? []).map { entry -> JSONValue in
                        guard entry["id"]?.stringValue == conversation, case .object(var fields) = entry else { return entry }
                        fields["unreadCount"] = 0
                        return .object(fields)
                    }
                    doc = MergePatch.apply(["conversations": .array(conversations)], to: doc)
                }
            } catch { throw fail(error) }
        }
    }

    struct ChatSync: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "sync", abstract: "Sync, opening new conversations as they appear.")
        @OptionGroup var global: Global

        func run() throws {
            do {
                let client = try global.client()
                try client.sync()
                if try openConversations(client) { try client.sync() }
            } catch { throw fail(error) }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Conversations, unread counts, messages and presence, from the local store.")
        @OptionGroup var global: Global

        func run() throws {
            do {
                let client = try global.client()
                let (_, doc) = try me(client)
                var conversations: [JSONValue] = []
                for entry in doc["conversations"]?.arrayValue ?? [] {
                    guard let id = entry["id"]?.stringValue else { continue }
                    let messages = try client.store.documents("chatMessages", partition: "conversation=" + id)
                        .map(\.doc)
                        .sorted { ($0["serverTimestamp"]?.stringValue ?? "~", $0["timestamp"]?.stringValue ?? "")
                            < ($1["serverTimestamp"]?.stringValue ?? "~", $1["timestamp"]?.stringValue ?? "") }
                    conversations.append(["id": .string(id), "displayName": entry["displayName"] ?? .null,
                                          "unreadCount": entry["unreadCount"] ?? .null,
                                          "messages": .array(messages.map { ["text": $0["text"] ?? .null, "author": $0["author"] ?? .null] })])
                }
                var presence: [String: JSONValue] = [:]
                for chatster in try client.store.documents("chatsters") {
                    presence[chatster.doc["userName"]?.stringValue ?? chatster.id] = chatster.doc["presence"] ?? .null
                }
                emit(["presence": doc["presence"] ?? .null, "conversations": .array(conversations), "chatsters": .object(presence)])
            } catch { throw fail(error) }
        }
    }
}
