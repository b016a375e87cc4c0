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
