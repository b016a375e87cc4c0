import Accounts
import Administration
import Database
import Foundation
import Mail
import Schema
import Support
import Sync
import TidewayJSON
import Web

/// What each collection of a Realm app becomes in Tideway (docs/import.md has the table and
/// the drift rules in prose). The O-FISH `wildaid` database's collections map to the patrol
/// collections of an agency's partition, its `Agency` and `User` documents to agencies and
/// accounts; RChat's `User` documents become accounts.
package enum Mapping {
    /// A source collection's destination.
    package enum Target: Sendable, Equatable {
        case documents(SyncCollection)
        case agencies
        case users
        case history
        /// RChat's messages: written as their authors, in their conversations.
        case chatMessages
        /// Known, deliberately not imported (the reason is reported).
        case ignored(String)
    }

    /// By the source collection's name as Atlas has it (case-insensitive).
    package static func target(of collection: String) -> Target? {
        switch collection.lowercased() {
        case "boardingreports": .documents(.reports)
        case "photo", "photos": .documents(.photos)
        case "dutychange", "dutychanges": .documents(.dutyChanges)
        case "menudata": .documents(.menuData)
        case "agency", "agencies": .agencies
        case "user", "users": .users
        case "changehistory": .history
        case "chatster", "chatsters":
            .ignored("the server keeps chatsters from the accounts (domain.md, server effect 6)")
        case "chatmessage", "chatmessages": .chatMessages
        default: nil
        }
    }

    /// The order collections are imported in: agencies and people first (partitions and
    /// invitations), then history (read before the reports it belongs to), then documents.
    package static func rank(_ target: Target) -> Int {
        switch target {
        case .agencies: 0
        case .users: 1
        case .documents(.menuData): 2
        case .history: 3
        case .documents(.reports): 4
        case .documents(.photos): 5
        case .documents: 6
        case .chatMessages: 7
        case .ignored: 8
        }
    }

    // MARK: values

    /// A BSON value as Tideway's JSON: ObjectIds as their hex string, dates as ISO 8601 in
    /// UTC with milliseconds, binary as standard base64 (UUIDs as their text), decimals as
    /// strings, timestamps as their seconds.
    package static func json(_ value: BSONValue) -> JSON {
        switch value {
        case .double(let number): number.isFinite ? .double(number) : .null
        case .string(let text): .string(text)
        case .document(let fields): .object(JSONObject(fields.mapValues(json)))
        case .array(let items): .array(items.map(json))
        case .binary(let subtype, let bytes):
            if (subtype == 3 || subtype == 4) && bytes.count == 16 {
                .string(UUID(uuid: bytes.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }).uuidString.lowercased())
            } else {
                .string(Data(bytes).base64EncodedString())
            }
        case .objectID(let hex): .string(hex)
        case .bool(let flag): .bool(flag)
        case .date(let millis): .string(ISODate.string(millis: millis))
        case .null: .null
        case .int32(let number): .int(Int64(number))
        case .timestamp(let seconds, _): .int(Int64(seconds))
        case .int64(let number): .int(number)
        case .decimal128(let text): .string(text)
        }
    }

    /// An `_id` as Tideway's document id (ObjectIds keep their hex, so `referencingReportID`
    /// and other references still match).
    package static func id(_ value: BSONValue?) -> String? {
        switch value {
        case .objectID(let hex)?: return hex
        case .string(let text)? where !text.isEmpty && text.utf8.count <= 128: return text
        case .int32(let n)?: return String(n)
        case .int64(let n)?: return String(n)
        case .binary(let subtype, let bytes)? where (subtype == 3 || subtype == 4) && bytes.count == 16:
            return json(.binary(subtype: subtype, bytes: bytes)).stringValue
        default: return nil
        }
    }

    /// The agency a document belongs to: its `agency` (O-FISH's partition key, the agency's
    /// name; `agency.name` in a User), else its `_partition` / `partition` (`agency=<key>` or
    /// the bare key).
    package static func agency(of doc: BSONValue) -> String? {
        if case .string(let name)? = doc["agency"], !name.isEmpty { return name }
        if case .string(let name)? = doc["agency"]?["name"], !name.isEmpty { return name }
        for key in ["_partition", "partition"] {
            if case .string(let text)? = doc[key], !text.isEmpty {
                if text.hasPrefix("agency=") { return String(text.dropFirst(7)) }
                return text.contains("=") ? nil : text  // user=…, conversation=…: not an agency
            }
        }
        return nil
    }

    /// Fields that only carried the partition in Realm (the partition is the row's now).
    static let partitionFields: Set<String> = ["agency", "_partition", "partition"]

    /// A document's fields as Tideway stores them: without the partition fields, `_id` the
    /// export's id as text; nil when the document is not an object.
    static func storedFields(of doc: BSONValue, id: String) -> JSONObject? {
        guard case .object(var fields) = json(doc) else { return nil }
        for name in partitionFields { fields[name] = nil }
        fields["_id"] = .string(id)
        return fields
    }

    // MARK: drift rules

    /// One adjustment made to fit Tideway's schema: which rule, where.
    package struct Adjustment: Sendable, Hashable {
        package let rule: String
        package let path: String
    }

    package struct Refusal: Error, Sendable, Hashable {
        package let path: String
        package let reason: String
        package init(path: String, reason: String) {
            self.path = path
            self.reason = reason
        }
    }

    /// The rules, by name (docs/import.md explains each):
    /// - `extra-field`: a field the schema does not know (the web app's extras) is dropped;
    /// - `empty-as-missing`: "", null or [] where the schema wants another type is a missing value;
    /// - `numeric-string`: a decimal's string where a number is wanted becomes the number;
    /// - `status-alias` (in the schema itself): At Sea / On Land are On Duty / Off Duty.
    /// With `strict`, only `empty-as-missing` and `status-alias` apply and extra fields are refused.
    package static func fit(_ document: JSON, collection: SyncCollection, strict: Bool) -> Result<(JSON, [Adjustment]), Refusal> {
        var doc = document
        var adjustments: [Adjustment] = []
        for _ in 0..<200 {
            switch CollectionSchemas.validate(collection: collection.rawValue, document: doc) {
            case .success(let normalized):
                if normalized["status"] != doc["status"], collection == .dutyChanges {
                    adjustments.append(Adjustment(rule: "status-alias", path: "/status"))
                }
                return .success((normalized, adjustments))
            case .failure(let violation):
                let path = violation.path
                let current = Pointer.get(doc, path)
                if violation.message == "unknown field" && !strict {
                    doc = Pointer.removing(doc, path)
                    adjustments.append(Adjustment(rule: "extra-field", path: Pointer.generic(path)))
                } else if violation.message != "required field missing", let current,
                          current == .null || current == .string("") || current == .array([]) {
                    doc = Pointer.removing(doc, path)
                    adjustments.append(Adjustment(rule: "empty-as-missing", path: Pointer.generic(path)))
                } else if !strict, case .string(let text)? = current, violation.message.hasSuffix("got string"),
                          violation.message.contains("number") || violation.message.contains("integer"),
                          let number = Double(text), number.isFinite {
                    let value: JSON = number.rounded() == number && violation.message.contains("integer")
                        ? .int(Int64(number)) : .double(number)
                    doc = Pointer.setting(doc, path, value)
                    adjustments.append(Adjustment(rule: "numeric-string", path: Pointer.generic(path)))
                } else {
                    return .failure(Refusal(path: path.isEmpty ? "/" : path, reason: violation.message))
                }
            }
        }
        return .failure(Refusal(path: "/", reason: "too many fields to adjust"))
    }
}

/// JSON Pointer (RFC 6901) reads and edits of JSON values.
enum Pointer {
    static func tokens(_ path: String) -> [String] {
        guard path.hasPrefix("/") else { return [] }
        return path.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map {
            $0.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
        }
    }

    static func get(_ value: JSON, _ path: String) -> JSON? {
        var current: JSON? = value
        for token in tokens(path) {
            switch current {
            case .object(let fields)?: current = fields[token]
            case .array(let items)?: current = Int(token).flatMap { items.indices.contains($0) ? items[$0] : nil }
            default: return nil
            }
        }
        return current
    }

    static func setting(_ value: JSON, _ path: String, _ new: JSON?) -> JSON {
        edit(value, tokens(path)[...], new)
    }

    static func removing(_ value: JSON, _ path: String) -> JSON { edit(value, tokens(path)[...], nil) }

    private static func edit(_ value: JSON, _ tokens: ArraySlice<String>, _ new: JSON?) -> JSON {
        guard let first = tokens.first else { return new ?? .null }
        switch value {
        case .object(var fields):
            if tokens.count == 1 {
                fields[first] = new
            } else if let inner = fields[first] {
                fields[first] = edit(inner, tokens.dropFirst(), new)
            }
            return .object(fields)
        case .array(var items):
            guard let index = Int(first), items.indices.contains(index) else { return value }
            if tokens.count == 1 {
                if let new { items[index] = new } else { items.remove(at: index) }
            } else {
                items[index] = edit(items[index], tokens.dropFirst(), new)
            }
            return .array(items)
        default:
            return value
        }
    }

    /// Array indexes as `-`, so that refusals and adjustments group by field (`/crew/-/name`).
    static func generic(_ path: String) -> String {
        guard path.hasPrefix("/") else { return path.isEmpty ? "/" : path }
        return "/" + path.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.allSatisfy(\.isNumber) && !$0.isEmpty ? "-" : String($0) }.joined(separator: "/")
    }
}
