import Database
import FastCGI
import Foundation
import Support
import Sync
import TidewayJSON
import Web

/// An agency's marine protected areas (`mpas` documents): created from pasted GeoJSON or a
/// coordinate list, renamed and recoloured, deleted; each drawn as a small SVG outline.
/// Every change goes through the write path.
enum ProtectedAreas {
    struct AreaView {
        let id: String
        let name: String
        let country: String
        let hexColor: String
        let points: Int
        let svg: String
        let action: String

        init(id: String, doc: JSON, agencyHref: String) {
            self.id = id
            name = doc["name"]?.stringValue ?? ""
            country = doc["country"]?.stringValue ?? ""
            let colour = doc["hexColor"]?.stringValue ?? ""
            hexColor = ProtectedAreas.isHexColour(colour) ? colour : "#0b5d7a"
            let ring = ProtectedAreas.ring(from: doc["coordinates"]) ?? []
            points = ring.count
            svg = ProtectedAreas.svg(ring, colour: hexColor)
            action = agencyHref + "/areas/" + id
        }
    }

    /// `#rgb` or `#rrggbb`: the only colour text that reaches the SVG and the style attribute.
    static func isHexColour(_ text: String) -> Bool {
        let digits = text.dropFirst()
        return text.first == "#" && (digits.count == 3 || digits.count == 6) && digits.allSatisfy(\.isHexDigit)
    }

    static func ring(from value: JSON?) -> [(Double, Double)]? {
        guard let points = value?.arrayValue else { return nil }
        var ring: [(Double, Double)] = []
        for point in points {
            guard let pair = point.arrayValue, pair.count >= 2, let lon = pair[0].doubleValue, let lat = pair[1].doubleValue else { return nil }
            ring.append((lon, lat))
        }
        return ring
    }

    /// A GeoJSON Polygon (or a Feature holding one, or a bare ring), or one `lon, lat` pair
    /// per line. The ring is closed if it is not already; the schema checks the rest.
    static func parseCoordinates(_ text: String) throws -> [(Double, Double)] {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        var ring: [(Double, Double)]?
        if trimmed.hasPrefix("{") || trimmed.hasPrefix("[") {
            guard let json = try? JSON(parsing: Array(trimmed.utf8)) else { throw AppError.invalid("the GeoJSON does not parse") }
            var geometry = json
            if json["type"]?.stringValue == "Feature", let inner = json["geometry"] { geometry = inner }
            if geometry["type"] != nil {
                guard geometry["type"]?.stringValue == "Polygon", let rings = geometry["coordinates"]?.arrayValue, let outer = rings.first else {
                    throw AppError.invalid("expected a GeoJSON Polygon")
                }
                ring = Self.ring(from: outer)
            } else {
                ring = Self.ring(from: geometry)
            }
        } else {
            ring = []
            for line in trimmed.split(whereSeparator: \.isNewline) {
                let numbers = line.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" || $0 == ";" }).compactMap { Double($0) }
                guard numbers.count == 2 else { throw AppError.invalid("each line needs two numbers: longitude, latitude") }
                ring?.append((numbers[0], numbers[1]))
            }
        }
        guard var points = ring, points.count >= 3 else { throw AppError.invalid("an area needs at least three points") }
        guard points.allSatisfy({ abs($0.0) <= 180 && abs($0.1) <= 90 }) else {
            throw AppError.invalid("longitudes lie within ±180 and latitudes within ±90")
        }
        if points.first! != points.last! { points.append(points.first!) }
        return points
    }

    /// The outline fitted into a 160×120 box, north up.
    static func svg(_ ring: [(Double, Double)], colour: String) -> String {
        guard ring.count >= 3 else { return "" }
        let lons = ring.map(\.0), lats = ring.map(\.1)
        let minLon = lons.min()!, maxLon = lons.max()!, minLat = lats.min()!, maxLat = lats.max()!
        let scale = min(150 / max(maxLon - minLon, 1e-9), 110 / max(maxLat - minLat, 1e-9))
        let points = ring.map { lon, lat in
            let x = 5 + (lon - minLon) * scale
            let y = 5 + (maxLat - lat) * scale
            return String(format: "%.1f,%.1f", x, y)
        }.joined(separator: " ")
        return """
            <svg class="area-preview" viewBox="0 0 160 120" width="160" height="120" role="img" aria-label="outline of the area">\
            <rect width="160" height="120" fill="#e6f1f6"/>\
            <polygon points="\(points)" fill="\(colour)" fill-opacity="0.35" stroke="\(colour)" stroke-width="1.5"/></svg>
            """
    }

    static func fields(_ form: [String: String], requireGeometry: Bool) throws -> JSONObject {
        var fields: JSONObject = [:]
        let name = (form["name"] ?? "").trimmingCharacters(in: .whitespaces)
        guard (1...200).contains(name.count) else { throw AppError.invalid("the name needs 1–200 characters") }
        fields["name"] = .string(name)
        let colour = (form["hexColor"] ?? "").trimmingCharacters(in: .whitespaces)
        if !colour.isEmpty {
            guard isHexColour(colour) else { throw AppError.invalid("the colour is written #rrggbb") }
            fields["hexColor"] = .string(colour)
        }
        if requireGeometry {
            if let country = form["country"], !country.isEmpty { fields["country"] = .string(String(country.prefix(100))) }
            if let description = form["description"], !description.isEmpty { fields["description"] = .string(String(description.prefix(2000))) }
            fields["coordinates"] = .array(try parseCoordinates(form["coordinates"] ?? "").map { .array([.double($0.0), .double($0.1)]) })
        }
        return fields
    }

    static func partition(_ key: String) throws -> Partition {
        guard let partition = Partition("agency=" + key) else { throw AppError.notFound("no such agency") }
        return partition
    }

    static func create(_ context: RequestContext) throws -> HTTPResponse {
        let key = Admin.pathParameter(context, "key")
        let form = try WebSession.postedForm(context)
        let partition = try partition(key)
        let fields = try fields(form, requireGeometry: true)
        return try WebSession.asUser(context) { tx, caller in
            try Admin.requireAgencyRights(caller, agency: key)
            let id = Admin.newDocumentID()
            try Admin.write(Change(changeID: Crypto.newToken(), collection: .mpas, partition: partition, id: id, op: .insert,
                                   body: .object(fields)), caller: caller, in: tx, context: context)
            try Admin.audit(tx, context, caller, action: "area.create", target: "mpas:\(id)",
                            detail: ["agency": .string(key), "name": fields["name"] ?? .null])
            return Pages.redirect(AgencyPages.href(key) + "?saved=1#areas")
        }
    }

    static func edit(_ context: RequestContext) throws -> HTTPResponse {
        let key = Admin.pathParameter(context, "key")
        let id = Admin.pathParameter(context, "id")
        let form = try WebSession.postedForm(context, limit: 16 * 1024)
        let partition = try partition(key)
        let fields = try fields(form, requireGeometry: false)
        return try WebSession.asUser(context) { tx, caller in
            try Admin.requireAgencyRights(caller, agency: key)
            try Admin.write(Change(changeID: Crypto.newToken(), collection: .mpas, partition: partition, id: id, op: .update,
                                   body: .object(fields)), caller: caller, in: tx, context: context)
            try Admin.audit(tx, context, caller, action: "area.edit", target: "mpas:\(id)", detail: .object(fields))
            return Pages.redirect(AgencyPages.href(key) + "?saved=1#areas")
        }
    }

    static func delete(_ context: RequestContext) throws -> HTTPResponse {
        let key = Admin.pathParameter(context, "key")
        let id = Admin.pathParameter(context, "id")
        _ = try WebSession.postedForm(context, limit: 4 * 1024)
        let partition = try partition(key)
        return try WebSession.asUser(context) { tx, caller in
            try Admin.requireAgencyRights(caller, agency: key)
            try Admin.write(Change(changeID: Crypto.newToken(), collection: .mpas, partition: partition, id: id, op: .delete, body: nil),
                            caller: caller, in: tx, context: context)
            try Admin.audit(tx, context, caller, action: "area.delete", target: "mpas:\(id)", detail: ["agency": .string(key)])
            return Pages.redirect(AgencyPages.href(key) + "?saved=1#areas")
        }
    }
}

