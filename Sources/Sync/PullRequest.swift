import TidewayJSON
import Web

/// A parsed `POST /sync/pull` body: which partitions from where, how many, how long to wait.
struct PullRequest {
    enum Start {
        case invalidPartition
        case from(Partition, Cursor)
    }

    var partitions: [(name: String, start: Start)] = []
    var limit: Int
    var wait: Double
    /// The device's install, as in a push; optional. Given, the pull records where the
    /// device's cursors stand (for the inspector's cursor age).
    var clientID: String?
    /// Per partition, the cursor's text when it is exactly what `Cursor.encode` would give
    /// for it (an answer that leaves the cursor where it was gives the text back).
    var cursorTexts: [String: String] = [:]

    static let maxPartitions = 200

    init(_ body: JSONObject, key: [UInt8], maxLimit: Int) throws {
        guard case .object(let requested)? = body["partitions"] else {
            throw AppError.badRequest("partitions must be an object of partition to cursor")
        }
        guard requested.count <= Self.maxPartitions else {
            throw AppError.badRequest("at most \(Self.maxPartitions) partitions per pull")
        }
        switch body["limit"] {
        case nil, .null?: limit = min(1000, maxLimit)
        case let value?:
            guard let n = value.intValue, n >= 1, n <= maxLimit else {
                throw AppError.badRequest("limit must be an integer from 1 to \(maxLimit)")
            }
            limit = Int(n)
        }
        switch body["wait"] {
        case nil, .null?: wait = 0
        case let value?:
            guard let seconds = value.doubleValue, seconds >= 0, seconds <= 30 else {
                throw AppError.badRequest("wait must be a number of seconds from 0 to 30")
            }
            wait = seconds
        }
        switch body["clientId"] {
        case nil, .null?: clientID = nil
        case .string(let text)? where !text.isEmpty && text.utf8.count <= 200: clientID = text
        default: throw AppError.badRequest("clientId must be a string of 1–200 bytes")
        }
        for (name, cursorValue) in requested.sorted(by: { $0.key < $1.key }) {
            guard let partition = Partition(name) else {
                partitions.append((name, .invalidPartition))
                continue
            }
            switch cursorValue {
            case .null:
                partitions.append((name, .from(partition, .start)))
            case .string(let text):
                guard let (cursor, canonical) = Cursor.read(text, partition: name, key: key) else {
                    throw AppError.badRequest("the cursor of \(name) is not one this server gave for it")
                }
                if canonical { cursorTexts[name] = text }
                partitions.append((name, .from(partition, cursor)))
            default:
                throw AppError.badRequest("a cursor is a string or null")
            }
        }
    }
}
