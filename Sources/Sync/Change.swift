import TidewayJSON
import Web

/// One change of a push, as the client sent it, checked for shape. A change whose shape is
/// wrong is rejected on its own (`invalid`); only a body that is not a push at all is a 400.
public struct Change: Sendable {
    public enum Op: String, Sendable { case insert, update, delete }

    public let changeID: String
    public let collection: SyncCollection
    public let partition: Partition
    public let id: String
    public let op: Op
    /// The whole document (insert) or a JSON Merge Patch (update).
    public let body: JSON?

    /// A change the server builds itself (back-office forms): an insert carries the whole
    /// document (its `_id` is set from `id`, as for a pushed one), an update a merge patch.
    public init(changeID: String, collection: SyncCollection, partition: Partition, id: String, op: Op, body: JSON?) {
        self.changeID = changeID
        self.collection = collection
        self.partition = partition
        self.id = id
        self.op = op
        if op == .insert, case .object(var doc)? = body {
            doc["_id"] = .string(id)
            self.body = .object(doc)
        } else {
            self.body = body
        }
    }

    static let allowedKeys: Set<String> = ["changeId", "collection", "partition", "id", "op", "doc", "patch"]

    /// The change id first: without it no result can be reported, and the batch is a 400.
    static func changeID(of value: JSON) throws -> String {
        guard case .object(let fields) = value else { throw AppError.badRequest("every change is an object") }
        guard let id = fields["changeId"]?.stringValue, !id.isEmpty, id.utf8.count <= 200 else {
            throw AppError.badRequest("every change needs a changeId string (1–200 bytes)")
        }
        return id
    }

    /// Parses a change; a problem is thrown as the rejection for this change alone.
    package init(_ value: JSON, changeID: String) throws(ChangeRejection) {
        guard case .object(let fields) = value else { throw .invalid("a change is an object") }
        if let unknown = fields.keys.first(where: { !Self.allowedKeys.contains($0) }) {
            throw .invalid("unknown field '\(unknown)' in a change")
        }
        self.changeID = changeID
        guard let name = fields["collection"]?.stringValue, let collection = SyncCollection(rawValue: name) else {
            throw .invalid("unknown collection")
        }
        guard let partitionName = fields["partition"]?.stringValue, let partition = Partition(partitionName) else {
            throw .invalid("not a partition: expected agency=, user=, all-users= or conversation=")
        }
        guard partition.kind == collection.partitionKind else {
            throw .invalid("\(collection.rawValue) documents do not live in \(partition.kind.rawValue) partitions")
        }
        guard let id = fields["id"]?.stringValue, !id.isEmpty, id.utf8.count <= 128 else {
            throw .invalid("id must be a string of 1–128 bytes")
        }
        guard let opName = fields["op"]?.stringValue, let op = Op(rawValue: opName) else {
            throw .invalid("op must be insert, update or delete")
        }
        switch op {
        case .insert:
            guard case .object(var doc)? = fields["doc"], fields["patch"] == nil else {
                throw .invalid("an insert carries the whole document in doc", path: "/doc")
            }
            if let docID = doc["_id"] {
                guard docID.stringValue == id else { throw .invalid("_id must equal id", path: "/_id") }
            } else {
                doc["_id"] = .string(id)
            }
            body = .object(doc)
        case .update:
            guard case .object(let patch)? = fields["patch"], fields["doc"] == nil else {
                throw .invalid("an update carries a merge patch object in patch", path: "/patch")
            }
            if let patchID = patch["_id"], patchID.stringValue != id {
                throw .invalid("_id cannot change", path: "/_id")
            }
            body = .object(patch)
        case .delete:
            guard fields["doc"] == nil, fields["patch"] == nil else { throw .invalid("a delete carries no doc or patch") }
            body = nil
        }
        self.collection = collection
        self.partition = partition
        self.id = id
        self.op = op
    }
}

/// Why one change was refused: becomes `{"status": "rejected", "error": {...}}`.
public struct ChangeRejection: Error, Sendable {
    public let code: AppError.Code
    public let message: String
    public let path: String?

    public static func invalid(_ message: String, path: String? = nil) -> ChangeRejection {
        ChangeRejection(code: .invalid, message: message, path: path)
    }
    public static func forbidden(_ message: String) -> ChangeRejection {
        ChangeRejection(code: .forbidden, message: message, path: nil)
    }

    func result(changeID: String) -> JSON {
        var error: JSONObject = ["code": .string(code.rawValue), "message": .string(message)]
        if let path { error["path"] = .string(path) }
        return ["changeId": .string(changeID), "status": "rejected", "error": .object(error)]
    }
}
