import Testing

@testable import Administration

@Suite struct CursorAgeTests {
    @Test func durationsInWords() {
        #expect(CursorAge.duration(0) == "under a minute")
        #expect(CursorAge.duration(59) == "under a minute")
        #expect(CursorAge.duration(60) == "1 min")
        #expect(CursorAge.duration(2 * 3600 + 5 * 60 + 30) == "2 h 5 min")
        #expect(CursorAge.duration(3 * 86400 + 4 * 3600 + 59) == "3 d 4 h")
    }
}
