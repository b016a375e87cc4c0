import Foundation
import Testing

@testable import TidewayClient

@Suite struct LiveSyncTests {
    /// Server-Sent Events cut anywhere: the same events, in order, with their ids.
    @Test func theEventStreamParsesAcrossChunks() {
        let text = ": keep-alive\n\nid: 7\nevent: change\ndata: {\"partition\": \"agency=Gabon\"}\n\nevent: change\r\nid: 8\r\ndata: a\r\ndata: b\r\n\r\n"
        let bytes = Array(text.utf8)
        for cut in [1, 3, 7, 1000] {
            var parser = EventStreamParser()
            var events: [(event: String, data: String, id: String?)] = []
            for start in stride(from: 0, to: bytes.count, by: cut) {
                events += parser.feed(Data(bytes[start..<min(bytes.count, start + cut)]))
            }
            #expect(events.map(\.event) == ["change", "change"])
            #expect(events.map(\.data) == ["{\"partition\": \"agency=Gabon\"}", "a\nb"])
            #expect(events.map(\.id) == ["7", "8"])
        }
    }

    /// Delays grow, stay under the cap, and are spread (jitter) between half and all of it.
    @Test func backoffGrowsWithJitterUnderItsCap() {
        let backoff = Backoff(base: 0.5, cap: 30)
        for attempt in 1...12 {
            let ceiling = min(30, 0.5 * pow(2, Double(attempt - 1)))
            let delays = (0..<200).map { _ in backoff.delay(attempt: attempt) }
            #expect(delays.allSatisfy { $0 >= ceiling / 2 && $0 <= ceiling })
            #expect(Set(delays).count > 100)
        }
    }
}
