import Database
import TidewayJSON

extension WritePath {
    /// The statements of the write round trip and where each change's result comes from.
    ///
    /// Inserts of ids found nowhere (the usual push of a device back from sea) are gathered
    /// per collection into one `app.insert_documents` statement, placed where the first of
    /// them came: a later change of the same document comes after it, and changes of other
    /// documents do not depend on each other's order. Everything else is one
    /// `app.apply_change` per change, in order.
    struct Plan {
        enum Slot {
            case ready(JSON)
            /// Row `row` of statement `statement`'s answer.
            case fromStatement(Int, row: Int)
        }

        /// New documents of one collection, written by one statement.
        struct NewDocuments {
            let statement: Int
            var changeIDs: [String] = []
            var ids: [String] = []
            var partitions: [String] = []
            /// The documents as the text of one JSON array, its `]` still to come.
            var docs: [UInt8] = [UInt8(ascii: "[")]
            /// One change alone is cheaper through apply_change when a savepoint guards it
            /// either way (the usual path: apply_change's INSERT is a one-row VALUES).
            var single: SQL?
        }

        /// Collections whose new documents may be gathered (users' documents carry chat
        /// intents and cannot be inserted by their owner; chatsters are the server's).
        static let gathered: Set<SyncCollection> = [.reports, .photos, .dutyChanges, .menuData, .mpas, .agencyTasks, .chatMessages, .tasks, .teamNotes]

        let clientID: String?
        /// A push in one round trip (`applyFirstPush`): its new documents are inserted
        /// without a savepoint, even one alone, since a refusal sends the whole push the
        /// usual way anyway.
        let oneTrip: Bool
        private(set) var statements: [SQL] = []
        private(set) var results: [Slot] = []
        private var deviceSet = false
        private var newDocuments: [SyncCollection: NewDocuments] = [:]

        init(clientID: String?, oneTrip: Bool = false) {
            self.clientID = clientID
            self.oneTrip = oneTrip
            // In one round trip, app.open_first_push names the device (the push's clientId).
            deviceSet = oneTrip
        }

        mutating func answer(_ result: JSON) { results.append(.ready(result)) }

        mutating func append(_ statement: SQL) { statements.append(statement) }

        mutating func reject(_ rejection: ChangeRejection, changeID: String, log: Bool = true) {
            let result = rejection.result(changeID: changeID)
            results.append(.ready(result))
            // Logged so that a retry gets this same first outcome.
            if log, let clientID {
                statements.append("select app.log_rejection(\(clientID), \(changeID), \(result.serialized())::jsonb)")
            }
        }

        /// `document`: the serialized document to store (`Prepared.serialized`), nil for a delete.
        mutating func write(_ change: Change, document: [UInt8]?, intents: [JSON], expectedVersion: Int64?, isNew: Bool) {
            if !deviceSet {
                // For the report history (0020): the push's clientId; without one the back
                // office ("web"), unless the server's own job already named itself.
                statements.append(.reused("""
                    select set_config('tideway.device', coalesce(\(clientID), \
                    nullif(current_setting('tideway.device', true), ''), 'web'), true)
                    """))
                deviceSet = true
            }
            let clientID = clientID
            let one = { Self.applyChange(change, document: document, intents: intents, expectedVersion: expectedVersion, clientID: clientID) }
            guard isNew, change.op == .insert, intents.isEmpty, let document, Self.gathered.contains(change.collection) else {
                results.append(.fromStatement(statements.count, row: 0))
                statements.append(one())
                return
            }
            var group = newDocuments[change.collection] ?? {
                statements.append("select 'placeholder'")  // filled by finished()
                // Made only where it may be used: its text copies the whole document.
                return NewDocuments(statement: statements.count - 1, single: oneTrip ? nil : one())
            }()
            results.append(.fromStatement(group.statement, row: group.ids.count))
            group.changeIDs.append(change.changeID)
            group.ids.append(change.id)
            group.partitions.append(change.partition.description)
            if group.ids.count > 1 { group.docs.append(UInt8(ascii: ",")) }
            group.docs.append(contentsOf: document)
            newDocuments[change.collection] = group
        }

        /// What opens a push in one round trip (`app.open_first_push`, WritePath.applyFirstPush):
        /// the app version the device sent ("" for none), whether the device's row is written
        /// (`DevicePushes`), the push's change ids and the (partition, collection) pairs it
        /// writes, whose rights it checks.
        struct Opening {
            let appVersion: String
            var deviceRow = true
            let changeIDs: [String]
            let partitions: [String]
            let collections: [String]
        }

        /// Whether the push's opening goes in its writes' one statement (`app.insert_documents`'
        /// `first_push_app_version`): one collection's new documents and nothing else, the
        /// usual push of a device back from sea. Otherwise it is a statement of its own, first.
        private var opensInItsWrites: Bool { statements.count == 1 && newDocuments.count == 1 }

        /// One result per change, from `written`, the answers of `finished(opening:)`'s statements.
        func answers(_ written: [QueryResult], opening: Opening? = nil) throws -> [JSON] {
            let offset = opening == nil || opensInItsWrites ? 0 : 1
            return try results.map { slot in
                switch slot {
                case .ready(let result): return result
                case .fromStatement(let index, let row):
                    let rows = written[offset + index].rows
                    return try JSON(parsing: row < rows.count ? rows[row][0] ?? "{}" : "{}")
                }
            }
        }

        /// The statements, with each gathered group's one statement filled in; with `opening`
        /// (one round trip), the push opened by the first of them.
        func finished(opening: Opening? = nil) -> [SQL] {
            var all = statements
            for (collection, group) in newDocuments {
                if group.ids.count == 1, !oneTrip, let single = group.single {
                    all[group.statement] = single
                } else {
                    var array = group.docs
                    array.append(UInt8(ascii: "]"))
                    let opens = opensInItsWrites ? opening : nil
                    all[group.statement] = .reused("""
                        select result::text from app.insert_documents(\(collection.rawValue), \(clientID), \
                        \(group.changeIDs)::text[], \(group.ids)::text[], \(group.partitions)::text[], \
                        \(String(decoding: array, as: UTF8.self))::jsonb, \
                        guarded => \(!oneTrip), first_push_app_version => \(opens?.appVersion), \
                        device_row => \(opens?.deviceRow ?? true)) order by ord
                        """)
                }
            }
            guard let opening, !opensInItsWrites else { return all }
            return [.reused("""
                select app.open_first_push(\(clientID), \(opening.appVersion), \(opening.changeIDs)::text[], \
                       \(opening.partitions)::text[], \(opening.collections)::text[], \(opening.deviceRow))
                """)] + all
        }

        static func applyChange(_ change: Change, document: [UInt8]?, intents: [JSON], expectedVersion: Int64?, clientID: String?) -> SQL {
            let intentText = intents.isEmpty ? nil : JSON.array(intents).serialized()
            let document = document.map { String(decoding: $0, as: UTF8.self) }
            return .reused("""
                select app.apply_change(\(change.collection.rawValue), \(change.partition.description), \(change.id), \
                \(change.op.rawValue), \(document)::jsonb, \(clientID), \(change.changeID), \(expectedVersion), \
                \(intentText)::jsonb)::text
                """)
        }
    }
}
