import Foundation
import Testing

@testable import Schema
@testable import TidewayJSON

@Suite struct PatrolSchemaTests {
    @Test(arguments: [("At Sea", "On Duty"), ("On Land", "Off Duty"), ("On Duty", "On Duty"), ("Off Duty", "Off Duty")])
    func normalizesDutyStatus(written: String, stored: String) throws {
        let doc: JSON = ["_id": "d1", "user": ["email": "a@b.c"], "date": "2026-01-01T08:00:00Z", "status": .string(written)]
        let normalized = try CollectionSchemas.validate(collection: "dutyChanges", document: doc).get()
        #expect(normalized["status"] == .string(stored))
    }

    @Test func refusesAnUnknownDutyStatus() {
        let doc: JSON = ["_id": "d1", "user": ["email": "a@b.c"], "date": "2026-01-01T08:00:00Z", "status": "Napping"]
        #expect((try? CollectionSchemas.validate(collection: "dutyChanges", document: doc).get()) == nil)
    }

    func mpa(_ ring: [[Double]]) -> JSON {
        ["_id": "m1", "name": "Reserve", "coordinates": .array(ring.map { .array($0.map(JSON.double)) })]
    }

    @Test func acceptsAClosedRingOfFourPoints() throws {
        _ = try CollectionSchemas.validate(collection: "mpas", document: mpa([[0, 0], [1, 0], [1, 1], [0, 0]])).get()
    }

    @Test(arguments: [
        [[0.0, 0.0], [1, 0], [1, 1], [0, 1]],  // not closed
        [[0.0, 0.0], [1, 0], [0, 0]],  // closed but three points
        [[0.0, 0.0], [1, 0], [1, 1], [200, 0], [0, 0]],  // a longitude out of range
    ])
    func refusesBadRings(ring: [[Double]]) {
        #expect((try? CollectionSchemas.validate(collection: "mpas", document: mpa(ring)).get()) == nil)
    }
}
