import Database
import FastCGI
import Support
import TidewayJSON
import Web

/// `/boardings.csv` and `/boardings.geojson`: the list's reports (its filters and sort) as
/// a file, streamed. A cursor in one snapshot hands the rows over 1,000 at a time and each
/// batch is written out before the next, so 100,000 reports export in the memory of one batch.
enum BoardingExport {
    static let batchSize = 1000

    /// Export columns, computed by PostgreSQL from each document.
    static let columns = """
        r.id, r.partition, to_char(r.boarded_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as boarded,
        r.doc ->> 'timestamp' as filed, r.is_draft,
        r.doc #>> '{vessel,name}' as vessel, r.doc #>> '{vessel,permitNumber}' as permit,
        r.doc #>> '{vessel,nationality}' as nationality, r.doc #>> '{vessel,homePort}' as home_port,
        r.doc #>> '{captain,name}' as captain, r.doc #>> '{captain,license}' as captain_license,
        (select string_agg(concat_ws(' ', c ->> 'name', '(' || (c ->> 'license') || ')'), '; ') from app.elements(r.doc -> 'crew') c) as crew,
        r.doc #>> '{reportingOfficer,email}' as officer,
        r.doc #>> '{location,1}' as lat, r.doc #>> '{location,0}' as lon,
        r.doc #>> '{inspection,activity,name}' as activity, r.doc #>> '{inspection,fishery,name}' as fishery,
        r.doc #>> '{inspection,gearType,name}' as gear,
        (select string_agg(concat(c ->> 'fish', ' ', c ->> 'number', ' / ', c ->> 'weight', ' ', c ->> 'unit'), '; ')
           from app.elements(r.doc #> '{inspection,actualCatch}') c) as catch,
        r.doc #>> '{inspection,summary,safetyLevel,level}' as safety,
        r.doc #>> '{inspection,summary,safetyLevel,amberReason}' as amber_reason, r.violation_count,
        (select string_agg(concat_ws(' ', nullif(v ->> 'disposition', ''), v #>> '{offence,code}'), '; ')
           from app.elements(r.doc #> '{inspection,summary,violations}') v) as violations,
        r.doc #>> '{inspection,summary,seizures,text}' as seizures,
        (select string_agg(n ->> 'note', ' | ') from app.elements(r.doc -> 'notes') n) as notes
        """

    /// (CSV header, result column, is text that a spreadsheet could take for a formula).
    static let csvColumns: [(String, String, Bool)] = [
        ("id", "id", true), ("agency", "agency", true), ("boarded_at", "boarded", false), ("filed_at", "filed", false),
        ("draft", "is_draft", false), ("vessel", "vessel", true), ("permit_number", "permit", true),
        ("nationality", "nationality", true), ("home_port", "home_port", true), ("captain", "captain", true),
        ("captain_license", "captain_license", true), ("crew", "crew", true), ("officer", "officer", true),
        ("latitude", "lat", false), ("longitude", "lon", false), ("activity", "activity", true), ("fishery", "fishery", true),
        ("gear", "gear", true), ("catch", "catch", true), ("safety_level", "safety", true), ("amber_reason", "amber_reason", true),
        ("violation_count", "violation_count", false), ("violations", "violations", true), ("seizures", "seizures", true),
        ("notes", "notes", true),
    ]

    static func csv(_ context: RequestContext) throws -> HTTPResponse {
        try export(context, contentType: "text/csv; charset=utf-8", filename: "boardings.csv",
                   head: csvColumns.map(\.0).joined(separator: ",") + "\r\n", separator: "", tail: "") { row in
            csvColumns.map { _, column, isText in
                let value = column == "agency" ? agency(row) : column == "is_draft" ? (row.bool("is_draft") == true ? "yes" : "no")
                    : (row[column] ?? "")
                return csvField(value, guardFormula: isText)
            }.joined(separator: ",") + "\r\n"
        }
    }

    static func geojson(_ context: RequestContext) throws -> HTTPResponse {
        try export(context, contentType: "application/geo+json", filename: "boardings.geojson",
                   head: "{\"type\":\"FeatureCollection\",\"features\":[\n", separator: ",\n", tail: "\n]}\n") { row in
            var geometry = JSON.null
            if let lon = row["lon"].flatMap(Double.init), let lat = row["lat"].flatMap(Double.init) {
                geometry = ["type": "Point", "coordinates": [.double(lon), .double(lat)]]
            }
            var properties: JSONObject = ["agency": .string(agency(row)), "draft": .bool(row.bool("is_draft") == true),
                                              "violationCount": .int(Int64(row.int("violation_count") ?? 0))]
            for (name, column) in [("boardedAt", "boarded"), ("filedAt", "filed"), ("vessel", "vessel"), ("permitNumber", "permit"),
                                   ("nationality", "nationality"), ("captain", "captain"), ("officer", "officer"),
                                   ("safetyLevel", "safety"), ("violations", "violations"), ("catch", "catch")] {
                if let value = row[column] { properties[name] = .string(value) }
            }
            let feature: JSON = ["type": "Feature", "id": .string(row["id"] ?? ""), "geometry": geometry,
                                 "properties": .object(properties)]
            return feature.serialized()
        }
    }

    /// Checks the session and reads the filter first (so a signed-out visitor is sent to
    /// sign in, not given an empty file), then streams.
    static func export(_ context: RequestContext, contentType: String, filename: String, head: String, separator: String,
                       tail: String, line: @escaping (Database.Row) -> String) throws -> HTTPResponse {
        let (filter, own) = try WebSession.asUser(context, readOnly: true) { _, caller in
            let filter = BoardingFilter(query: context.query, allowAgency: caller.info.isGlobalAdmin)
            return (filter, BoardingAccess.ownPartition(caller.info))
        }
        return HTTPResponse(
            status: 200,
            headers: [("Content-Type", contentType), ("Content-Disposition", "attachment; filename=\"\(filename)\""),
                      ("Cache-Control", "no-store"), ("X-Accel-Buffering", "no")],
            body: .stream { writer in
                writer.write(head)
                guard let token = WebSession.sessionToken(context) else { return }
                do {
                    // One snapshot; a cursor hands the rows over 1,000 at a time.
                    try context.asCaller(token: token, kind: .session, readOnly: true, snapshot: true) { tx, _ in
                        _ = try tx.query("declare boardings_export no scroll cursor for " + filter.exportQuery(ownPartition: own, columns: columns))
                        var first = true
                        while true {
                            let rows = try tx.query(SQL(unsafeSQL: "fetch forward \(batchSize) from boardings_export")).rows
                            var chunk = ""
                            chunk.reserveCapacity(rows.count * 400)
                            for row in rows {
                                if !first { chunk += separator }
                                first = false
                                chunk += line(row)
                            }
                            guard writer.write(chunk), writer.flush() else { return }
                            if rows.count < batchSize { break }
                        }
                    }
                } catch {
                    // The head is sent: the best left is to end the file visibly short.
                    Log.error("export stopped: \(error)", requestID: context.requestID)
                    writer.write("\n# export stopped by an error\n")
                    return
                }
                writer.write(tail)
                writer.flush()
            })
    }

    static func agency(_ row: Database.Row) -> String { String((row["partition"] ?? "").dropFirst("agency=".count)) }

    /// RFC 4180 quoting; text that starts like a formula gets a leading `'` so that a
    /// spreadsheet shows it instead of running it (a vessel named `=HYPERLINK(...)`).
    static func csvField(_ value: String, guardFormula: Bool) -> String {
        var text = value
        if guardFormula, let first = text.first, "=+-@\t\r".contains(first) { text = "'" + text }
        if text.unicodeScalars.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) {
            return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }
        return text
    }
}
