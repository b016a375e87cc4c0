import Database
import FastCGI
import TidewayJSON
import Web

/// `/boardings/<id>` and `/boardings/<id>/print`: one report, every section, its photos, a
/// map of the position and its history. A report the caller may not read is "not found",
/// exactly like one that does not exist, so ids of other agencies reveal nothing.
enum BoardingPage {
    struct Photo {
        let dataURI: String
        let pictureURL: String?
        let caption: String
    }

    struct View {
        let chrome: Pages.Chrome
        let id: String
        let title: String
        let subtitle: String
        let sections: [BoardingReportView.Section]
        let map: String
        let hasMap: Bool
        let photos: [Photo]
        let hasPhotos: Bool
        let historyAvailable: Bool
        let history: [BoardingHistory.Entry]
        let hasHistory: Bool
        let editHref: String
        let printHref: String
        let canEdit: Bool
        let isDraft: Bool
        let saved: Bool
        let safety: String
        let safetyClass: String
        let violations: Int
    }

    /// The report row under the caller's policies, or 404.
    static func load(_ tx: Transaction, id: String, forUpdate: Bool = false) throws -> (doc: JSON, partition: String, version: Int64) {
        let result = try tx.query("""
            select doc::text as doc, partition, version from sync.reports where id = \(id) and not deleted
            """ + SQL(unsafeSQL: forUpdate ? " for update" : ""))
        guard let row = result.first, let text = row["doc"], let partition = row["partition"],
              let doc = try? JSON(parsing: text, limits: JSONLimits(maxStringBytes: 1 << 20))
        else { throw AppError.notFound("no such boarding report, or not one of your agency's") }
        return (doc, partition, row.int64("version") ?? 1)
    }

    static func show(_ context: RequestContext) throws -> HTTPResponse {
        try render(context, template: "boardings/show")
    }

    static func print(_ context: RequestContext) throws -> HTTPResponse {
        try render(context, template: "boardings/print")
    }

    static func render(_ context: RequestContext, template: String) throws -> HTTPResponse {
        let id = context.params["id"] ?? ""
        return try WebSession.asUser(context, readOnly: true) { tx, caller in
            let report = try load(tx, id: id)
            let photoIDs = Array(Set(collectPhotoIDs(report.doc))).sorted()
            let (photoRows, present) = try tx.run(
                Statement.rows("""
                    select id, doc ->> 'thumbNail' as thumb, doc ->> 'pictureURL' as url, doc ->> 'date' as date
                      from sync.photos
                     where partition = \(report.partition) and not deleted
                       and (id = any(\(photoIDs)::text[]) or doc ->> 'referencingReportID' = \(id))
                     order by doc ->> 'date', id limit 60
                    """),
                Statement.value(BoardingHistory.existsQuery, "present", as: Bool.self))
            let photos = photoRows.compactMap { row -> Photo? in
                guard let thumb = row["thumb"], !thumb.isEmpty else { return nil }
                return Photo(dataURI: "data:\(imageType(base64: thumb));base64,\(thumb)",
                             pictureURL: safeURL(row["url"]), caption: BoardingDates.readable(row["date"] ?? ""))
            }
            var history: [BoardingHistory.Entry] = []
            let historyAvailable = present == true
            if historyAvailable {
                history = BoardingHistory.entries(try tx.query(BoardingHistory.query(reportID: id)).rows)
            }
            let doc = report.doc
            var map = ""
            if let point = doc["location"]?.arrayValue, point.count == 2, let lon = point[0].doubleValue, let lat = point[1].doubleValue {
                map = BoardingMap.svg(lon: lon, lat: lat)
            }
            let agency = String(report.partition.dropFirst("agency=".count))
            let level = doc["inspection"]?["summary"]?["safetyLevel"]?["level"]?.stringValue ?? ""
            let rank = BoardingFilter.safetyLevels[level] ?? 0
            let violations = (doc["inspection"]?["summary"]?["violations"]?.arrayValue ?? [])
                .filter { ["Warning", "Citation"].contains($0["disposition"]?.stringValue ?? "") }.count
            let vessel = doc["vessel"]?["name"]?.stringValue ?? ""
            let path = "/boardings/" + FormData.encode(id)
            let view = View(
                chrome: Pages.Chrome(title: "Boarding of " + (vessel.isEmpty ? "an unnamed vessel" : vessel), caller: caller),
                id: id, title: vessel.isEmpty ? "Unnamed vessel" : vessel,
                subtitle: BoardingDates.readable(doc["date"]?.stringValue ?? doc["timestamp"]?.stringValue ?? ""),
                sections: BoardingReportView(doc: doc, agency: agency).sections,
                map: map, hasMap: !map.isEmpty, photos: photos, hasPhotos: !photos.isEmpty,
                historyAvailable: historyAvailable, history: history, hasHistory: !history.isEmpty,
                editHref: path + "/edit", printHref: path + "/print",
                canEdit: caller.info.agency.map { "agency=" + $0 == report.partition } ?? false,
                isDraft: doc["draft"]?.boolValue == true, saved: context.query["saved"] == "1",
                safety: BoardingText.safetyName(rank), safetyClass: BoardingText.safetyClass(rank), violations: violations)
            return Pages.html(context, template, view)
        }
    }

    /// Every `photoIDs` list anywhere in the report (attachments of each part, notes).
    static func collectPhotoIDs(_ value: JSON) -> [String] {
        switch value {
        case .object(let fields):
            return fields.flatMap { key, child in
                key == "photoIDs" ? (child.arrayValue ?? []).compactMap(\.stringValue) : collectPhotoIDs(child)
            }
        case .array(let items): return items.flatMap(collectPhotoIDs)
        default: return []
        }
    }

    static func imageType(base64: String) -> String {
        if base64.hasPrefix("iVBOR") { return "image/png" }
        if base64.hasPrefix("R0lGOD") { return "image/gif" }
        if base64.hasPrefix("UklGR") { return "image/webp" }
        return "image/jpeg"
    }

    /// Only our own blob paths and https links become links: never `javascript:` or `data:`.
    static func safeURL(_ url: String?) -> String? {
        guard let url, !url.isEmpty else { return nil }
        if url.hasPrefix("/") && !url.hasPrefix("//") { return url }
        if url.lowercased().hasPrefix("https://") { return url }
        return nil
    }
}
