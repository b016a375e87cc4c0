import Foundation
import Testing

@testable import Patrol

@Suite struct HistoryChainTests {
    func entry(_ id: Int64, version: Int64, change: String, prev: String) -> HistoryChain.Entry {
        var e = HistoryChain.Entry(id: id, reportID: "r1", partition: "agency=Gabon", seq: 6 + version, version: version,
                                   userID: "", device: "dev-1", at: "2026-01-02T03:04:05.000006Z", op: "update",
                                   change: change, prevHash: prev, hash: "")
        e.hash = HistoryChain.hash(of: e, prevHash: prev)
        return e
    }

    @Test func canonicalFormPrefixesEveryFieldWithItsByteLength() {
        let e = HistoryChain.Entry(id: 1, reportID: "r1", partition: "agency=Gabon", seq: 7, version: 1, userID: "",
                                   device: "dev-1", at: "2026-01-02T03:04:05.000006Z", op: "insert",
                                   change: #"{"a": 1, "é": "x"}"#, prevHash: "", hash: "")
        let text = String(decoding: HistoryChain.canonicalBytes(of: e, prevHash: ""), as: UTF8.self)
        #expect(text == "25:tideway-report-history-v1\n0:\n2:r1\n12:agency=Gabon\n1:7\n1:1\n0:\n5:dev-1\n"
            + "27:2026-01-02T03:04:05.000006Z\n6:insert\n19:{\"a\": 1, \"é\": \"x\"}\n")
        // Computed independently (Python's hashlib over the same bytes).
        #expect(HistoryChain.hash(of: e, prevHash: "") == "ee9f61e9c71382151671b3d573b8b8d3d3629df83a7a0e11921ae8ebeca0a97e")
    }

    @Test func fieldBoundariesCannotBeShifted() {
        var a = entry(1, version: 1, change: "{}", prev: "")
        var b = a
        a.reportID = "r1\n"
        a.partition = "agency=Gabon"
        b.reportID = "r1"
        b.partition = "\nagency=Gabon"
        #expect(HistoryChain.hash(of: a, prevHash: "") != HistoryChain.hash(of: b, prevHash: ""))
    }

    @Test func anIntactChainHolds() {
        let first = entry(1, version: 1, change: #"{"x": 1}"#, prev: "")
        let second = entry(2, version: 2, change: #"{"x": 2}"#, prev: first.hash)
        #expect(HistoryChain.check([first, second], currentVersion: 2) == nil)
    }

    @Test func namesTheFirstAlteredEntry() {
        let first = entry(1, version: 1, change: #"{"x": 1}"#, prev: "")
        var second = entry(2, version: 2, change: #"{"x": 2}"#, prev: first.hash)
        let third = entry(3, version: 3, change: #"{"x": 3}"#, prev: second.hash)
        second.change = #"{"x": 9}"#
        let broken = HistoryChain.check([first, second, third], currentVersion: 3)
        #expect(broken?.entryID == 2)
        #expect(broken?.reason.contains("altered") == true)
    }

    @Test func findsARemovedEntryInTheMiddleAndAtTheEnd() {
        let first = entry(1, version: 1, change: "{}", prev: "")
        let second = entry(2, version: 2, change: "{}", prev: first.hash)
        let third = entry(3, version: 3, change: "{}", prev: second.hash)
        #expect(HistoryChain.check([first, third], currentVersion: 3)?.entryID == 3)
        #expect(HistoryChain.check([first, second], currentVersion: 3)?.reason.contains("version 3") == true)
    }

    @Test func findsARecomputedHashThatNoLongerLinks() {
        // Rewriting an entry and its own hash still breaks the link of the entry after it.
        let first = entry(1, version: 1, change: "{}", prev: "")
        let second = entry(2, version: 2, change: "{}", prev: first.hash)
        let forged = entry(1, version: 1, change: #"{"forged": true}"#, prev: "")
        #expect(HistoryChain.check([forged, second], currentVersion: 2)?.entryID == 2)
    }
}
