import TidewayJSON
import Web

/// What the server decides about a document beyond its schema: fields the server owns,
/// fields a user may not touch, who may change what. Row-level security has already
/// decided whether the caller may write the partition at all; these rules are about
/// the content.
enum ServerRules {
    static func check(_ change: Change, current: JSON?, proposed: JSON?, caller: CallerInfo) throws(ChangeRejection) -> Prepared {
        if change.collection.isWrittenByServer {
            throw .forbidden("\(change.collection.rawValue) is written by the server only")
        }
        switch change.collection {
        case .users:
            return try UserDocumentRules.check(change, current: current, proposed: proposed, caller: caller)
        case .chatMessages:
            return Prepared(document: try ChatMessageRules.check(change, current: current, proposed: proposed, caller: caller))
        default:
            return Prepared(document: proposed)
        }
    }
}

/// A change ready to write: the document to store (nil: delete) and, for a user's own
/// document, the conversation intents the server carries out first.
struct Prepared {
    var document: JSON?
    var intents: [JSON] = []
    /// `document` as it goes to PostgreSQL, once `WritePath.prepare` has checked it: made
    /// once, its size checked on it (it was made three times per new document). Bytes, put
    /// into the statement's parameter as they are: made into a `String` each, then joined,
    /// a push of 25 copied and validated every document twice more.
    var serialized: [UInt8]?
}
