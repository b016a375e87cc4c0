import Testing
import Web

@testable import Dashboards

/// The dashboards' date range: the last twelve months unless the query says otherwise.
@Suite struct DateRangeTests {
    @Test func dateRangeDefaultsToTwelveMonthsAndRefusesBadDates() throws {
        let today = try #require(DateRange.parse("2026-11-22"))
        let range = try DateRange.from(query: [:], today: today)
        #expect(range == DateRange(from: "2025-11-23", to: "2026-11-22"))
        #expect(range.startAt == "2025-11-23T00:00:00Z")
        #expect(range.endAt == "2026-11-23T00:00:00Z")
        #expect(try DateRange.from(query: ["from": "2026-02-01", "to": "2026-02-28"]).endAt == "2026-03-01T00:00:00Z")
        for bad in [["from": "2026-02-30"], ["to": "yesterday"], ["from": "2026-03-01", "to": "2026-02-01"], ["from": "26-1-1"]] {
            #expect(throws: AppError.self) { try DateRange.from(query: bad, today: today) }
        }
    }
}
