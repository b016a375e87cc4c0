import Testing

@testable import Boardings
@testable import TidewayJSON

/// The back-office report form (issue 6): documents to fields and back, only real changes
/// in the patch, rows that keep their attachments, conflicts, search words, CSV quoting.
@Suite struct BoardingFormTests {
    static let doc: JSON = try! JSON(parsing: """
        {"_id":"r1","timestamp":"2024-05-01T10:00:00.123Z","date":"2024-05-01T09:00:00+02:00","draft":false,
         "location":[-78.5,-0.25],
         "vessel":{"name":"Gaviota","homePort":"Manta","nationality":"EC","permitNumber":"EC-1","attachments":{"photoIDs":["p0"]}},
         "captain":{"name":"Ana","license":""},
         "crew":[{"name":"A","license":"1","attachments":{"photoIDs":["pa"]}},{"name":"B","license":"2","attachments":{"photoIDs":["pb"]}}],
         "inspection":{"actualCatch":[{"fish":"Tuna","number":3,"weight":12.0,"unit":"kg"}],
                       "summary":{"safetyLevel":{"level":"Green","amberReason":""},"violations":[]}}}
        """)

    static let menus: BoardingMenus = {
        var menus = BoardingMenus()
        menus.violations = [("C1", "Fishing without a license")]
        return menus
    }()

    @Test func untouchedFormIsNoChange() {
        let form = BoardingForm(document: Self.doc)
        let (edited, errors) = form.document(base: Self.doc, menus: Self.menus)
        #expect(errors.isEmpty)
        #expect(Self.doc.mergePatch(to: edited) == .object([:]))
    }

    @Test func editedFieldsAreThePatch() {
        var form = BoardingForm(document: Self.doc)
        form.values["/vessel/permitNumber"] = "EC-2"
        form.values["/inspection/actualCatch/0/weight"] = "12.5"
        let (edited, errors) = form.document(base: Self.doc, menus: Self.menus)
        #expect(errors.isEmpty)
        let patch = Self.doc.mergePatch(to: edited)
        #expect(patch["vessel"] == ["permitNumber": "EC-2"])
        #expect(patch["inspection"]?["actualCatch"]?.arrayValue?.first?["weight"] == .double(12.5))
        #expect(patch.patchLeaves().map(\.description) == ["/inspection/actualCatch", "/vessel/permitNumber"])
    }

    @Test func removingARowKeepsTheOtherRowsAttachments() {
        var form = BoardingForm(document: Self.doc)
        form.removeRow("/crew/0")
        let (edited, _) = form.document(base: Self.doc, menus: Self.menus)
        #expect(edited["crew"] == [["name": "B", "license": "2", "attachments": ["photoIDs": ["pb"]]]])
    }

    @Test func addedRowsAreCompletedOrRefused() {
        var form = BoardingForm(document: Self.doc)
        form.addRow(to: "/inspection/summary/violations")
        form.values["/inspection/summary/violations/0/disposition"] = "Warning"
        form.values["/inspection/summary/violations/0/offence/code"] = "C1"
        form.addRow(to: "/crew")  // left empty: dropped
        form.addRow(to: "/inspection/actualCatch")
        form.values["/inspection/actualCatch/1/fish"] = "Tuna"
        form.values["/inspection/actualCatch/1/number"] = "many"
        let (edited, errors) = form.document(base: Self.doc, menus: Self.menus)
        #expect(edited["inspection"]?["summary"]?["violations"] ==
            [["disposition": "Warning", "offence": ["code": "C1", "explanation": "Fishing without a license"]]])
        #expect(edited["crew"]?.arrayValue?.count == 2)
        #expect(errors["/inspection/actualCatch/1/number"] == "Enter a whole number, 0 or more.")
    }

    @Test func positionNeedsBothNumbersInRange() {
        var form = BoardingForm(document: Self.doc)
        form.values["/location/1"] = "95"
        let (_, errors) = form.document(base: Self.doc, menus: Self.menus)
        #expect(errors["/location/1"] != nil && errors["/location/0"] == nil)
        form.values["/location/0"] = ""
        form.values["/location/1"] = ""
        #expect(form.document(base: Self.doc, menus: Self.menus).0["location"] == nil)
    }

    @Test func sameFieldChangedByBothIsAConflictOtherFieldsAreNot() {
        let base = Self.doc
        let theirs = base.setting(JSONPointer(["captain", "name"]), to: "Bea").setting(JSONPointer(["vessel", "name"]), to: "X")
        let mine = base.setting(JSONPointer(["captain", "name"]), to: "Cleo").setting(JSONPointer(["vessel", "homePort"]), to: "Y")
        let conflicts = BoardingEditPage.conflicting(mine: base.mergePatch(to: mine), base: base, edited: mine, current: theirs)
        #expect(conflicts.map(\.pointer) == ["/captain/name"])
        #expect(conflicts.first?.mine == "“Cleo”" && conflicts.first?.theirs == "“Bea”")
        // The same new value on both sides is no conflict.
        #expect(BoardingEditPage.conflicting(mine: base.mergePatch(to: theirs), base: base, edited: theirs, current: theirs).isEmpty)
    }

    @Test(arguments: [
        ("Café 12", "'café':* & '12':*"),
        ("'); drop table x; --", "'drop':* & 'table':* & 'x':*"),
        ("  ", nil),
    ])
    func searchWordsAreLettersAndDigitsOnly(text: String, query: String?) {
        #expect(BoardingFilter.tsquery(text) == query)
    }

    @Test func csvQuotesAndDisarmsFormulas() {
        #expect(BoardingExport.csvField("a,b", guardFormula: true) == "\"a,b\"")
        #expect(BoardingExport.csvField("say \"hi\"\r\nbye", guardFormula: true) == "\"say \"\"hi\"\"\r\nbye\"")
        #expect(BoardingExport.csvField("=HYPERLINK(1)", guardFormula: true) == "'=HYPERLINK(1)")
        #expect(BoardingExport.csvField("-78.5", guardFormula: false) == "-78.5")
    }

    @Test func keysetPositionsRoundTripAndRejectJunk() {
        let text = BoardingFilter.encodePosition(("2024-05-01T10:00:00.000000Z", "abc"))
        #expect(BoardingFilter.decodePosition(text)?.id == "abc")
        #expect(BoardingFilter.decodePosition("not-base64!") == nil)
    }
}
