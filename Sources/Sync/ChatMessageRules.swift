import Foundation
import TidewayJSON
import Web

/// Chat messages (domain.md): the server sets `author`, `authorId` and `serverTimestamp`
/// from the writer; a message claiming another author is refused; only the author edits
/// or deletes.
enum ChatMessageRules {
    static func check(_ change: Change, current: JSON?, proposed: JSON?, caller: CallerInfo) throws(ChangeRejection) -> JSON? {
        if let current {
            guard current["authorId"]?.stringValue == caller.userID else {
                throw .forbidden("only the author may edit or delete a message")
            }
        }
        guard let proposed, case .object(var doc) = proposed else { return nil }
        if let author = doc["author"], author.stringValue != caller.email, author != current?["author"] {
            throw .forbidden("author must be the writer")
        }
        if let authorID = doc["authorId"], authorID.stringValue != caller.userID {
            throw .forbidden("authorId must be the writer")
        }
        doc["author"] = .string(caller.email)
        doc["authorId"] = .string(caller.userID)
        doc["serverTimestamp"] = current?["serverTimestamp"] ?? .string(Timestamp.now())
        return .object(doc)
    }
}

package enum Timestamp {
    /// ISO 8601 in UTC with milliseconds, the form the schemas accept.
    static func now() -> String { string(Date()) }

    package static func string(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}
