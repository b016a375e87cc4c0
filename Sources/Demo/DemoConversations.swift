import Foundation

public struct DemoConversation: Sendable, Equatable {
    public var id: String
    public var displayName: String
    public var memberEmails: [String]
    public var messages: [DemoMessage]
}

public struct DemoMessage: Sendable, Equatable {
    public var authorEmail: String
    public var text: String
    public var timestamp: Date
}

/// A few chats among the demo users, so that the chat screens are not empty. Members
/// are named by the local part of their demo email; a conversation whose members are
/// not all among `users` (an agency missing from the data) is left out.
public enum DemoConversations {
    public static func all(users: [DemoUser], now: Date) -> [DemoConversation] {
        scripts.compactMap { script in
            let emails = script.members.map { "\($0)@\(DemoUsers.emailDomain)" }
            guard emails.allSatisfy({ email in users.contains { $0.email == email } }) else { return nil }
            let messages = script.lines.map { line in
                DemoMessage(
                    authorEmail: emails[line.member], text: line.text,
                    timestamp: now.addingTimeInterval(-Double(line.minutesAgo) * 60))
            }
            return DemoConversation(id: script.id, displayName: script.name, memberEmails: emails, messages: messages)
        }
    }

    private struct Script {
        var id: String
        var name: String
        var members: [String]
        var lines: [(member: Int, minutesAgo: Int, text: String)]
    }

    /// Fixed ids (UUIDs, as chat conversation ids are) so that seeding twice finds the same conversations.
    private static let scripts = [
        Script(
            id: "6d2f0c1e-3b7a-4c51-9e0a-000000000001", name: "Galápagos joint patrol",
            members: [
                "parquenacionalgalapagos.admin", "parquenacionalgalapagos.officer1", "parquenacionalgalapagos.officer2",
                "ecuadoriangalapagos.officer1", "ecuadoriangalapagos.officer2",
            ],
            lines: [
                (0, 1440, "Tomorrow: joint patrol on the northern edge of the reserve, departure 06:00 from Puerto Ayora."),
                (3, 1430, "Our boat is ready. We bring the second inflatable."),
                (1, 300, "Two longliners on radar, 40 nm north-west of Darwin, AIS off."),
                (4, 290, "Heading there, ETA 2 hours."),
                (2, 120, "Boarding done. Shark fins in the hold, citation issued, report filed."),
                (0, 95, "Good work. Photos please, for the prosecutor."),
            ]),
        Script(
            id: "6d2f0c1e-3b7a-4c51-9e0a-000000000002", name: "Gabon night shift",
            members: ["gabon.admin", "gabon.officer1", "gabon.officer2"],
            lines: [
                (1, 720, "Trawler fishing inside the 3 nm zone off Mayumba, lights off."),
                (2, 710, "I see it on the radar. We leave in 10 minutes."),
                (2, 540, "Boarded. Mesh too small, warning given, nets measured and photographed."),
                (0, 480, "Merci. Please finish the report before the end of your shift."),
            ]),
        Script(
            id: "6d2f0c1e-3b7a-4c51-9e0a-000000000003", name: "Agency admins",
            members: ["admin", "wildaid.admin", "gabon.admin", "parquenacionalgalapagos.admin", "ecuadoriangalapagos.admin"],
            lines: [
                (0, 4320, "The new dashboards are live; compliance rates now come from the boarding reports directly."),
                (2, 4200, "Our officers want a species we do not have in the menu lists yet."),
                (0, 4190, "Agency admins can edit their menu lists in the back office now."),
                (3, 2880, "Can we see last year's boardings by vessel? The prosecutor asks."),
                (1, 2800, "Yes: search by vessel name or permit number in Reports."),
            ]),
        Script(
            id: "6d2f0c1e-3b7a-4c51-9e0a-000000000004", name: "Daniel & Priya",
            members: ["wildaid.officer1", "wildaid.officer2"],
            lines: [
                (0, 200, "Are you on duty tomorrow?"),
                (1, 185, "Yes, from 07:00. Swap Friday?"),
                (0, 180, "Deal."),
            ]),
    ]
}
