import Testing

@testable import Sync

@Suite struct ChangeNoticeTests {
    @Test func takesThePartitionAndTheCollection() {
        let notice = ChangeNotice(payload: "agency=Parque Nacional Galápagos/reports")
        #expect(notice.partition == "agency=Parque Nacional Galápagos" && notice.collection == "reports")
        #expect(Partition(notice.partition)?.kind == .agency)
    }

    @Test func aPartitionAloneNamesNoCollection() {
        #expect(ChangeNotice(payload: "agency=Gabon") == ChangeNotice(payload: "agency=Gabon"))
        #expect(ChangeNotice(payload: "agency=Gabon").partition == "agency=Gabon")
        #expect(ChangeNotice(payload: "agency=Gabon").collection == nil)
        #expect(ChangeNotice(payload: "all-users=all-the-users").collection == nil)
    }

    @Test func aStatementsNotificationNamesTheClockItLeft() {
        let notice = ChangeNotice(payload: "agency=Parque Nacional Galápagos/reports@17")
        #expect(notice.partition == "agency=Parque Nacional Galápagos" && notice.collection == "reports" && notice.clock == 17)
        let unnamed = ChangeNotice(payload: "agency=Gabon/@5")
        #expect(unnamed.partition == "agency=Gabon" && unnamed.collection == nil && unnamed.clock == 5)
        #expect(ChangeNotice(payload: "agency=Gabon/reports").clock == nil)
        #expect(ChangeNotice(payload: "agency=Gabon").clock == nil)
    }

    /// Partitions of every kind with the characters their grammar allows (Partition.swift):
    /// the clock is read after the last '/' only, and what is not a number there is no clock.
    @Test func oddPartitionNamesKeepTheirPartitionAndOnlyANumberIsAClock() {
        for partition in ["agency=St. John-Øster_ø 2", "conversation=a_b-C9", "team=4f1c3f8e-0c4a-4d7e-9a35-2b8f0c1d2e3f",
                          "user=4f1c3f8e-0c4a-4d7e-9a35-2b8f0c1d2e3f", "all-users=all-the-users"] {
            let notice = ChangeNotice(payload: partition + "/messages@9000000000")
            #expect(notice.partition == partition && notice.collection == "messages" && notice.clock == 9_000_000_000)
            #expect(ChangeNotice(payload: partition).partition == partition)
        }
        // Not a clock: the whole tail is the collection (the publisher then reads the whole
        // partition, as for any name it does not know), and a partition alone is never split.
        #expect(ChangeNotice(payload: "agency=Gabon/reports@x") == ChangeNotice(payload: "agency=Gabon/reports@x"))
        #expect(ChangeNotice(payload: "agency=Gabon/reports@x").collection == "reports@x")
        #expect(ChangeNotice(payload: "agency=Gabon/reports@-1").clock == nil)
        #expect(ChangeNotice(payload: "agency=Gabon/reports@").clock == nil)
        #expect(ChangeNotice(payload: "weird@3").partition == "weird@3" && ChangeNotice(payload: "weird@3").clock == nil)
    }

    @Test func onlyOneCollectionOfAKindOfSeveralIsReadAlone() {
        #expect(EventChanges.only(["reports"], of: .agency) == .reports)
        #expect(EventChanges.only(["tasks"], of: .team) == .tasks)
        // Two collections, another kind's, an unknown name, or a kind of one collection: the whole partition.
        #expect(EventChanges.only(["reports", "mpas"], of: .agency) == nil)
        #expect(EventChanges.only(["tasks"], of: .agency) == nil)
        #expect(EventChanges.only(["nothing"], of: .agency) == nil)
        #expect(EventChanges.only(["users"], of: .user) == nil)
        #expect(EventChanges.only([], of: .agency) == nil)
    }
}
