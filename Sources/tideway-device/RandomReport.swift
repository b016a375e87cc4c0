import Foundation
import TidewayModels

/// Random but valid boarding reports (the schema of docs/domain.md).
enum RandomReport {
    static let vessels = ["Amani", "Bahari", "Mwezi", "Nyota", "Pwani", "Samaki", "Tumaini", "Upepo"]
    static let ports = ["Libreville", "Port-Gentil", "Puerto Ayora", "Dar es Salaam", "Zanzibar"]
    static let species = ["Yellowfin tuna", "Skipjack tuna", "Swordfish", "Octopus", "Snapper"]
    static let gear = ["Longline", "Purse seine", "Gillnet", "Handline"]

    static func objectId() -> String {
        (0..<12).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    /// Bytes that start like a JPEG (what the server checks) and are unique.
    static func jpegLike(size: Int) -> Data {
        var words = [UInt64](repeating: 0, count: (max(size, 4) + 7) / 8)
        var generator = SystemRandomNumberGenerator()
        for i in words.indices { words[i] = generator.next() }
        var bytes = words.withUnsafeBytes { Data($0.prefix(max(size, 4))) }
        bytes.replaceSubrange(0..<4, with: [0xFF, 0xD8, 0xFF, 0xE0])
        return bytes
    }

    /// A small base64 thumbnail (the document keeps it; the picture goes to the blob store).
    static let thumbnail = Data([0xFF, 0xD8, 0xFF, 0xE0] + Array(repeating: UInt8(7), count: 60)).base64EncodedString()

    static func make(id: String, officer: AccountUser, vessel: String?, index: Int) -> Report {
        let now = ISO8601DateFormatter().string(from: Date())
        let parts = (officer.displayName ?? "Officer Tideway").split(separator: " ")
        let catchCount = Int.random(in: 0...3)
        return Report(
            _id: id, draft: false, timestamp: now, date: now,
            location: [Double.random(in: 8.5...9.5), Double.random(in: -1.5 ... -0.5)],
            reportingOfficer: Officer(name: PersonName(first: String(parts.first ?? "Officer"),
                                                       last: String(parts.dropFirst().first ?? "Tideway")),
                                      email: officer.email),
            vessel: Boat(name: vessel ?? vessels.randomElement()!, homePort: ports.randomElement()!, nationality: "Gabon",
                         permitNumber: "P-\(Int.random(in: 1000...9999))"),
            captain: CrewMember(name: "Captain \(index)", license: "L-\(Int.random(in: 100...999))"),
            crew: [CrewMember(name: "Deckhand \(index)", license: "L-\(Int.random(in: 100...999))")],
            notes: [AnnotatedNote(note: "filed by tideway-device")],
            inspection: Inspection(
                activity: NamedChoice(name: "Fishing"), fishery: NamedChoice(name: "Tuna"),
                gearType: NamedChoice(name: gear.randomElement()!),
                actualCatch: (0..<catchCount).map { _ in
                    Catch(fish: species.randomElement()!, number: Int.random(in: 1...50),
                          weight: Double(Int.random(in: 10...2000)), unit: "kilograms")
                },
                summary: Summary(safetyLevel: SafetyLevel(level: "Green", amberReason: ""), violations: [])))
    }
}
