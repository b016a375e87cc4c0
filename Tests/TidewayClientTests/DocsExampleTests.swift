import Foundation
import Testing
import TidewayClient
import TidewayModels

/// docs/client.md's "Write" example, as written there, against a store without a server.
@Suite struct DocsExampleTests {
    @Test func theWriteExampleQueuesAnInsertAPatchAndADelete() throws {
        let store = try LocalStore()
        let report = Report(_id: UUID().uuidString, timestamp: "2026-11-25T06:00:00Z",
                            vessel: Boat(name: "Amani", homePort: "Libreville", nationality: "Gabon", permitNumber: "P-1"))
        try store.insert(.from(report), collection: "reports", partition: "agency=Gabon")
        try store.modify("reports", report._id) { doc in
            var typed = try doc.decoded(as: Report.self)
            typed.vessel?.name = "Bahari"
            doc = try .from(typed)
        }
        #expect(try store.queued().map(\.body).last == ["vessel": ["name": "Bahari"]])
        try store.delete("reports", report._id)
        #expect(try store.queued().map(\.op) == ["insert", "update", "delete"])
    }

    /// Every model round-trips through JSONValue without adding fields the server would refuse.
    @Test func modelsLeaveOutWhatIsNotSet() throws {
        let report = Report(_id: "r", timestamp: "2026-11-25T06:00:00Z", inspection: Inspection(
            actualCatch: [Catch(fish: "Octopus", number: 3, weight: 12.5, unit: "kilograms")]))
        let value = try JSONValue.from(report)
        #expect(value == ["_id": "r", "timestamp": "2026-11-25T06:00:00Z",
                          "inspection": ["actualCatch": [["fish": "Octopus", "number": 3, "weight": 12.5, "unit": "kilograms"]]]])
        #expect(try value.decoded(as: Report.self) == report)
    }
}
