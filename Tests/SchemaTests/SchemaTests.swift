import Testing

@testable import Schema
@testable import TidewayJSON

@Suite struct SchemaTests {
    private func validate(_ collection: String, _ document: JSON) -> Result<JSON, SchemaViolation> {
        CollectionSchemas.validate(collection: collection, document: document)
    }

    private func violation(_ collection: String, _ document: JSON) -> SchemaViolation? {
        if case .failure(let violation) = validate(collection, document) { return violation }
        return nil
    }

    private var report: JSON { try! JSON(parsing: validReportText) }

    // MARK: reports

    @Test func acceptsTheFullReportUnchanged() throws {
        #expect(try validate("reports", report).get() == report)
    }

    @Test func acceptsAMinimalReport() throws {
        let minimal: JSON = ["_id": "r1", "timestamp": "2024-03-01T10:00:00Z"]
        #expect(try validate("reports", minimal).get() == minimal)
    }

    /// Each change, merged into the valid report, must be refused at exactly this path.
    @Test(arguments: [
        (#"{"vessel": {"name": 7}}"#, "/vessel/name", "expected string, got number"),
        (#"{"vessel": {"name": null}}"#, "/vessel/name", "required field missing"),
        (#"{"vessel": {"nmae": "Amani"}}"#, "/vessel/nmae", "unknown field"),
        (#"{"colour": "red"}"#, "/colour", "unknown field"),
        (#"{"timestamp": null}"#, "/timestamp", "required field missing"),
        (#"{"timestamp": "2024-03-01T10:00:00"}"#, "/timestamp", "expected an ISO 8601 date-time with a zone, like 2024-03-01T10:00:00Z"),
        (#"{"date": "2024-02-30T10:00:00Z"}"#, "/date", "expected an ISO 8601 date-time with a zone, like 2024-03-01T10:00:00Z"),
        (#"{"draft": "no"}"#, "/draft", "expected boolean, got string"),
        (#"{"location": [200, 0]}"#, "/location/0", "longitude outside [-180, 180]"),
        (#"{"location": [0, -91]}"#, "/location/1", "latitude outside [-90, 90]"),
        (#"{"location": [0]}"#, "/location", "expected [lon, lat], got 1 numbers"),
        (#"{"location": ["0", 1]}"#, "/location/0", "expected number, got string"),
        (#"{"reportingOfficer": {"email": 1}}"#, "/reportingOfficer/email", "expected string, got number"),
        (#"{"reportingOfficer": {"name": {"first": null}}}"#, "/reportingOfficer/name/first", "required field missing"),
        (#"{"vessel": {"ems": {}}}"#, "/vessel/ems", "expected array, got object"),
        (#"{"vessel": {"lastDelivery": {"date": "yesterday"}}}"#, "/vessel/lastDelivery/date",
         "expected an ISO 8601 date-time with a zone, like 2024-03-01T10:00:00Z"),
        (#"{"vessel": {"attachments": {"photoIDs": [1]}}}"#, "/vessel/attachments/photoIDs/0", "expected string, got number"),
        (#"{"captain": {"license": false}}"#, "/captain/license", "expected string, got boolean"),
        (#"{"inspection": {"fishery": {"name": null}}}"#, "/inspection/fishery/name", "required field missing"),
        (#"{"inspection": {"summary": {"safetyLevel": {"level": "Blue"}}}}"#, "/inspection/summary/safetyLevel/level",
         #"expected one of "Red", "Amber", "Green""#),
        (#"{"inspection": {"summary": {"safetyLevel": {"amberReason": null}}}}"#, "/inspection/summary/safetyLevel/amberReason",
         "required field missing"),
        (#"{"inspection": {"summary": {"seizures": {"text": null}}}}"#, "/inspection/summary/seizures/text", "required field missing"),
    ])
    func refusesAtThePath(patch: String, path: String, message: String) throws {
        let document = report.applyingMergePatch(try JSON(parsing: patch))
        #expect(violation("reports", document) == SchemaViolation(path: path, message: message))
    }

    /// Array elements are replaced whole by a merge patch, so these edit the fixture directly.
    @Test func refusesInsideArraysAtTheIndex() {
        func edited(_ pointer: String, _ value: JSON?) -> JSON { report.setting(JSONPointer(parsing: pointer)!, to: value) }
        let cases: [(JSON, String, String)] = [
            (edited("/crew/2/license", 5), "/crew/2/license", "expected string, got number"),
            (edited("/crew/1/license", nil), "/crew/1/license", "required field missing"),
            (edited("/notes/0/text", "x"), "/notes/0/text", "unknown field"),
            (edited("/inspection/actualCatch/0/number", 1.5), "/inspection/actualCatch/0/number", "expected integer, got fractional number"),
            (edited("/inspection/actualCatch/1/number", -1), "/inspection/actualCatch/1/number", "expected integer ≥ 0, got -1"),
            (edited("/inspection/actualCatch/1/weight", "61"), "/inspection/actualCatch/1/weight", "expected number, got string"),
            (edited("/inspection/summary/violations/1/disposition", "Arrest"), "/inspection/summary/violations/1/disposition",
             #"expected one of "", "Warning", "Citation""#),
            (edited("/inspection/summary/violations/0/offence/code", nil), "/inspection/summary/violations/0/offence/code",
             "required field missing"),
            (edited("/vessel/ems/0/registryNumber", nil), "/vessel/ems/0/registryNumber", "required field missing"),
        ]
        for (document, path, message) in cases {
            #expect(violation("reports", document) == SchemaViolation(path: path, message: message))
        }
    }

    /// Valid objects are walked in any order; a document with several problems still gets
    /// the first in key order, whichever the walk met first.
    @Test func severalViolationsGiveTheFirstInKeyOrder() {
        func edited(_ edits: [(String, JSON?)]) -> JSON {
            edits.reduce(report) { $0.setting(JSONPointer(parsing: $1.0)!, to: $1.1) }
        }
        let cases: [(JSON, String, String)] = [
            (edited([("/vessel/name", 5), ("/draft", 3)]), "/draft", "expected boolean, got number"),
            (edited([("/vessel/name", 5), ("/crew/1/license", nil)]), "/crew/1/license", "required field missing"),
            (edited([("/vessel/zzz", 1), ("/vessel/aaa", 1), ("/vessel/name", 5)]), "/vessel/aaa", "unknown field"),
            (edited([("/inspection/actualCatch/1/number", -1), ("/inspection/actualCatch/0/number", 1.5)]),
             "/inspection/actualCatch/0/number", "expected integer, got fractional number"),
        ]
        for (document, path, message) in cases {
            #expect(violation("reports", document) == SchemaViolation(path: path, message: message))
        }
    }

    @Test func emptyAmberReasonAndIntegralCountsAreAccepted() throws {
        let green = report.applyingMergePatch(["inspection": ["summary": ["safetyLevel": ["level": "Green", "amberReason": ""]]]])
        #expect(try validate("reports", green).get() == green)
        // 14.0 from a client that only has doubles is stored as the integer 14.
        let doubleCount = report.setting(JSONPointer(parsing: "/inspection/actualCatch/0/number")!, to: .double(14))
        #expect(try validate("reports", doubleCount).get() == report)
    }

    @Test func nullOptionalFieldsAreAccepted() throws {
        let document: JSON = ["_id": "r1", "timestamp": "2024-03-01T10:00:00Z", "vessel": nil, "location": nil]
        #expect(try validate("reports", document).get() == document)
    }

    /// `isValidAsIs`, the walk a valid document takes, says "as it is" exactly when `check`
    /// would answer nil: valid, nothing normalized. Any disagreement would store a document
    /// `check` refuses or normalizes (docs/performance/round-13.md, "The worker's CPU per push,
    /// thirteenth round").
    @Test func theValidWalkAgreesWithCheck() throws {
        func edited(_ pointer: String, _ value: JSON?) -> JSON { report.setting(JSONPointer(parsing: pointer)!, to: value) }
        let reports: [JSON] = [
            report, ["_id": "r1", "timestamp": "2024-03-01T10:00:00Z"], ["_id": "r1"], [:], [], "r1",
            ["_id": "r1", "timestamp": "2024-03-01T10:00:00Z", "vessel": nil, "location": nil],
            ["_id": "r1", "timestamp": nil], ["_id": nil, "timestamp": "2024-03-01T10:00:00Z"],
            edited("/inspection/actualCatch/0/number", .double(14)), edited("/inspection/actualCatch/0/number", 1.5),
            edited("/inspection/actualCatch/1/number", -1), edited("/crew/2/license", 5), edited("/crew/1/license", nil),
            edited("/notes/0/text", "x"), edited("/location", [200, 0]), edited("/location", [0]), edited("/vessel/ems", [:]),
            edited("/inspection/summary/safetyLevel/level", "Blue"), edited("/vessel/attachments/photoIDs", [1]),
            edited("/draft", "no"), edited("/date", "2024-02-30T10:00:00Z"), edited("/vessel/nmae", "Amani"),
        ]
        var cases = reports.map { ("reports", $0) }
        let duty: JSON = ["_id": "d1", "user": ["email": "n@example.org"], "date": "2024-03-01T06:00:00Z", "status": "On Duty"]
        cases += [("dutyChanges", duty), ("dutyChanges", duty.applyingMergePatch(["status": "At Sea"])),
                  ("dutyChanges", duty.applyingMergePatch(["status": "Asleep"]))]
        cases += [("mpas", mpa), ("mpas", mpa.applyingMergePatch(["hexColor": "E033FF"])), ("mpas", mpa.applyingMergePatch(["hexColor": "#FFF"])),
                  ("mpas", mpa.applyingMergePatch(["coordinates": [[1, 1], [2, 2], [1, 1]]]))]
        var asIs = 0
        for (collection, document) in cases {
            let fields = try #require(CollectionSchemas.all[collection]).fields
            var path = JSONPointer()
            let unchanged: Bool
            do throws(SchemaViolation) {
                unchanged = try SchemaValidator.check(document, against: .object(Schema.Fields(fields)), at: &path) == nil
            } catch {
                unchanged = false
            }
            #expect(SchemaValidator.isValidAsIs(document, against: .object(Schema.Fields(fields))) == unchanged, "\(collection) \(document)")
            if unchanged { asIs += 1 }
        }
        // The report, the minimal one, the one with nulls, the duty change and the mpa; the rest
        // are refused or normalized (14.0, "At Sea", "E033FF").
        #expect(asIs == 5)
    }

    // MARK: every collection

    @Test(arguments: ["reports", "photos", "dutyChanges", "menuData", "mpas", "users", "chatsters", "chatMessages"])
    func everyDocumentNeedsAnId(collection: String) {
        #expect(violation(collection, [:]) == SchemaViolation(path: "/_id", message: "required field missing"))
        #expect(violation(collection, ["_id": ""])?.path == "/_id")
        #expect(violation(collection, ["_id": .string(String(repeating: "a", count: 129))])?.path == "/_id")
        #expect(violation(collection, ["_id": 5]) == SchemaViolation(path: "/_id", message: "expected string, got number"))
        #expect(violation(collection, []) == SchemaViolation(path: "", message: "expected object, got array"))
    }

    /// An identifier's limit is 128 characters, not bytes: the bytes are counted first, the
    /// characters only when the bytes are over.
    @Test func identifiersAreCountedInCharacters() {
        let oneTwentyEight = String(repeating: "é", count: 128)  // 256 UTF-8 bytes
        func photo(_ id: String) -> JSON { ["_id": .string(id), "date": "2024-03-01T10:00:00Z"] }
        #expect(violation("photos", photo(oneTwentyEight)) == nil)
        #expect(violation("photos", photo(oneTwentyEight + "🐟"))?.path == "/_id")
        #expect(violation("photos", photo(String(repeating: "e\u{301}", count: 128))) == nil)  // 384 bytes
        #expect(violation("photos", photo(""))?.path == "/_id")
    }

    @Test func unknownCollection() {
        #expect(violation("boats", ["_id": "x"]) == SchemaViolation(path: "", message: "unknown collection"))
    }

    @Test func dateFormats() {
        let accepted = ["2024-03-01T10:00:00Z", "2024-03-01T10:00:00.123+02:00", "2024-02-29T23:59:59.5-11:30", "2000-02-29T00:00:00Z"]
        let refused = [
            "2024-03-01T10:00:00", "2024-03-01", "2024-03-01 10:00:00Z", "2023-02-29T10:00:00Z", "1900-02-29T10:00:00Z",
            "2024-13-01T10:00:00Z", "2024-03-01T24:00:00Z", "2024-03-01T10:00:00.Z", "2024-03-01T10:00:00+0200",
            "2024-03-01T10:00:00Zjunk", "2024-03-01t10:00:00z",
        ]
        for text in accepted { #expect(DateFormat.isZonedDateTime(text), "\(text)") }
        for text in refused { #expect(!DateFormat.isZonedDateTime(text), "\(text)") }
    }

    // MARK: photos

    @Test func photos() throws {
        let photo: JSON = ["_id": "ph-01", "thumbNail": "/9j/4AAQSkZJRg==", "pictureURL": "https://x/blobs/ph-01",
                           "referencingReportID": "r1", "date": "2024-03-01T10:00:00Z"]
        #expect(try validate("photos", photo).get() == photo)
        #expect(violation("photos", photo.applyingMergePatch(["thumbNail": "not base64!"]))
            == SchemaViolation(path: "/thumbNail", message: "expected standard padded base64"))
        #expect(violation("photos", photo.applyingMergePatch(["thumbNail": "QUJD="]))?.path == "/thumbNail")
        let bigThumb = JSON.string(String(repeating: "AAAA", count: 64 * 1024 / 3 + 1))
        #expect(violation("photos", photo.applyingMergePatch(["thumbNail": bigThumb]))
            == SchemaViolation(path: "/thumbNail", message: "base64 data larger than 65536 bytes"))
        // The transient full picture may be larger than a thumbnail.
        #expect((try? validate("photos", photo.applyingMergePatch(["picture": bigThumb])).get()) != nil)
        #expect(violation("photos", photo.applyingMergePatch(["date": nil]))?.path == "/date")
    }

    // MARK: dutyChanges

    @Test(arguments: [("At Sea", "On Duty"), ("On Land", "Off Duty"), ("On Duty", "On Duty"), ("Off Duty", "Off Duty")])
    func dutyStatusIsNormalized(written: String, stored: String) throws {
        let change: JSON = ["_id": "d1", "user": ["name": ["first": "Neema", "last": "Mushi"], "email": "n@example.org"],
                            "date": "2024-03-01T06:00:00Z", "status": .string(written)]
        #expect(try validate("dutyChanges", change).get() == change.applyingMergePatch(["status": .string(stored)]))
    }

    @Test func dutyChangeRefusals() {
        let change: JSON = ["_id": "d1", "user": ["email": "n@example.org"], "date": "2024-03-01T06:00:00Z", "status": "On Duty"]
        #expect(violation("dutyChanges", change.applyingMergePatch(["status": "Asleep"]))
            == SchemaViolation(path: "/status", message: #"expected one of "At Sea", "Off Duty", "On Duty", "On Land""#))
        #expect(violation("dutyChanges", change.applyingMergePatch(["user": nil]))
            == SchemaViolation(path: "/user", message: "required field missing"))
        #expect(violation("dutyChanges", change.applyingMergePatch(["user": ["name": ["middle": "K"]]]))
            == SchemaViolation(path: "/user/name/middle", message: "unknown field"))
    }

    // MARK: menuData

    @Test func menuData() throws {
        let menu: JSON = ["_id": "m1", "countryPickerPriorityList": ["EC"], "ports": ["Other"], "fisheries": [], "species": ["Tuna"],
                          "emsTypes": [], "activities": [], "gear": [], "violationCodes": ["A", "B"],
                          "violationDescriptions": ["a", "b"]]
        #expect(try validate("menuData", menu).get() == menu)
        #expect(violation("menuData", menu.applyingMergePatch(["violationDescriptions": ["a"]]))
            == SchemaViolation(path: "/violationDescriptions", message: "expected as many entries as violationCodes (2), got 1"))
        #expect(violation("menuData", menu.applyingMergePatch(["species": ["Tuna", 3]]))?.path == "/species/1")
        #expect(violation("menuData", menu.applyingMergePatch(["agency": "X"]))?.path == "/agency")
    }

    // MARK: mpas

    private var mpa: JSON {
        ["_id": "mpa1", "name": "Cocos Island", "country": "Costa Rica", "description": "Marine preserve", "hexColor": "#FFC300",
         "coordinates": [[-87.09, 5.77], [-87.42, 5.52], [-87.16, 5.2], [-87.09, 5.77]]]
    }

    @Test func mpaRingRules() throws {
        #expect(try validate("mpas", mpa).get() == mpa)
        let open = mpa.applyingMergePatch(["coordinates": [[-87.09, 5.77], [-87.42, 5.52], [-87.16, 5.2], [-86.52, 5.41]]])
        #expect(violation("mpas", open) == SchemaViolation(path: "/coordinates/3", message: "a ring must end at its first point"))
        let short = mpa.applyingMergePatch(["coordinates": [[1, 1], [2, 2], [1, 1]]])
        #expect(violation("mpas", short) == SchemaViolation(path: "/coordinates", message: "a ring needs at least 4 points, got 3"))
        let badPoint = mpa.applyingMergePatch(["coordinates": [[1, 1], [2, 2], [3, 95], [1, 1]]])
        #expect(violation("mpas", badPoint) == SchemaViolation(path: "/coordinates/2/1", message: "latitude outside [-90, 90]"))
        let mixedNumbers = mpa.applyingMergePatch(["coordinates": [[1, 1], [2, 2], [3, 3], [1.0, 1.0]]])
        #expect((try? validate("mpas", mixedNumbers).get()) != nil)
        #expect(violation("mpas", mpa.applyingMergePatch(["coordinates": nil]))?.path == "/coordinates")
    }

    @Test func mpaColours() throws {
        #expect(try validate("mpas", mpa.applyingMergePatch(["hexColor": "E033FF"])).get() == mpa.applyingMergePatch(["hexColor": "#E033FF"]))
        for bad: JSON in ["#FFF", "#GG0000", "red", "#FFC3000"] {
            #expect(violation("mpas", mpa.applyingMergePatch(["hexColor": bad])) == SchemaViolation(path: "/hexColor", message: "expected a colour as #RRGGBB"))
        }
    }

    // MARK: chat

    @Test func users() throws {
        let user: JSON = [
            "_id": "5f1c", "userName": "neema@example.org", "displayName": "Neema", "presence": "On-Line",
            "lastSeenAt": "2024-03-01T10:00:00Z",
            "userPreferences": ["displayName": "Neema", "shareLocation": true,
                                "avatarImage": ["_id": "a1", "thumbNail": "QUJD", "pictureURL": "https://x/a1", "date": "2024-03-01T10:00:00Z"]],
            "conversations": [["id": "c1", "displayName": "Patrol team", "unreadCount": 3,
                               "members": [["userId": "u2", "userName": "juma@example.org", "displayName": "Juma",
                                            "membershipStatus": "Membership active"]]]],
        ]
        #expect(try validate("users", user).get() == user)
        let negative = user.setting(JSONPointer(parsing: "/conversations/0/unreadCount")!, to: -1)
        #expect(violation("users", negative) == SchemaViolation(path: "/conversations/0/unreadCount", message: "expected integer ≥ 0, got -1"))
        #expect(violation("users", user.applyingMergePatch(["presence": "Away"]))?.path == "/presence")
        #expect(violation("users", user.setting(JSONPointer(parsing: "/conversations/0/members/0/role")!, to: "x"))?.path
            == "/conversations/0/members/0/role")
        #expect(violation("users", user.applyingMergePatch(["userPreferences": ["avatarImage": ["picture": "QUJD"]]]))?.path
            == "/userPreferences/avatarImage/picture")
    }

    @Test func chatstersAndMessages() throws {
        let chatster: JSON = ["_id": "5f1c", "userName": "neema@example.org", "presence": "Hidden", "avatarThumbNail": "QUJD"]
        #expect(try validate("chatsters", chatster).get() == chatster)
        let message: JSON = ["_id": "m1", "author": "neema@example.org", "authorId": "5f1c", "text": "Boarding done",
                             "location": [39.2, -6.8], "timestamp": "2024-03-01T10:00:00Z", "serverTimestamp": "2024-03-01T10:00:01.250Z",
                             "image": ["thumbNail": "QUJD", "pictureURL": "https://x/i1"]]
        #expect(try validate("chatMessages", message).get() == message)
        #expect(violation("chatMessages", message.applyingMergePatch(["text": nil]))?.path == "/text")
        #expect(violation("chatMessages", message.applyingMergePatch(["location": [39.2, -6.8, 0]]))?.path == "/location")
        #expect(violation("chatMessages", message.applyingMergePatch(["timestamp": "2024-03-01T10:00:00"]))?.path == "/timestamp")
    }
}

extension JSON {
    /// A copy with the value at `pointer` replaced (nil removes it); the parents must exist.
    fileprivate func setting(_ pointer: JSONPointer, to newValue: JSON?) -> JSON {
        guard let first = pointer.segments.first else { return newValue ?? .null }
        let rest = JSONPointer(Array(pointer.segments.dropFirst()))
        switch self {
        case .object(var fields):
            fields[first] = rest.segments.isEmpty ? newValue : fields[first]!.setting(rest, to: newValue)
            return .object(fields)
        case .array(var elements):
            let index = Int(first)!
            elements[index] = rest.segments.isEmpty ? (newValue ?? .null) : elements[index].setting(rest, to: newValue)
            return .array(elements)
        default:
            preconditionFailure("no container at \(pointer)")
        }
    }
}
