/// A commit notification on `tideway_changes` (app.tick, repeatable/0004): the partition that
/// changed and, when the writer named it, the collection of the change, as
/// `partition/collection` (`/` is in no partition's grammar). The compactor and the writers
/// that name no collection send the partition alone. Every listener wakes on the partition;
/// the event publisher reads only the named collections' changes (EventChanges).
public struct ChangeNotice: Sendable, Equatable {
    public let partition: String
    /// nil: any collection of the partition may have changed.
    public let collection: String?

    public init(payload: String) {
        let bytes = payload.utf8
        if let slash = bytes.lastIndex(of: UInt8(ascii: "/")) {
            partition = String(Substring(bytes[..<slash]))
            collection = String(Substring(bytes[bytes.index(after: slash)...]))
        } else {
            partition = payload
            collection = nil
        }
    }
}
