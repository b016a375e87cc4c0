/// A commit notification on `tideway_changes` (app.change_payload, repeatable/0004): the
/// partition that changed and, when the writer named it, the collection of the change, as
/// `partition/collection` (`/` is in no partition's grammar); a statement's changes
/// (app.ticks) also name the partition's clock they left, `partition/collection@clock`
/// (`partition/@clock` without a collection). The compactor and the writers that name no
/// collection send the partition alone. Every listener wakes on the partition; the event
/// publisher reads only the named collections' changes (EventChanges), and takes the clock
/// from the notification when it names one (EventPublisher.publishUnheard).
public struct ChangeNotice: Sendable, Equatable {
    public let partition: String
    /// nil: any collection of the partition may have changed.
    public let collection: String?
    /// The partition's clock after the change (every change up to it committed); nil when the
    /// notification names none.
    public let clock: Int64?

    public init(payload: String) {
        let bytes = payload.utf8
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")) else {
            (partition, collection, clock) = (payload, nil, nil)
            return
        }
        partition = String(Substring(bytes[..<slash]))
        // Only after the last '/': a partition's own characters are never read as a clock.
        let tail = bytes[bytes.index(after: slash)...]
        if let at = tail.lastIndex(of: UInt8(ascii: "@")), let number = Int64(String(Substring(tail[tail.index(after: at)...]))),
           number >= 0 {
            let name = String(Substring(tail[..<at]))
            (collection, clock) = (name.isEmpty ? nil : name, number)
        } else {
            (collection, clock) = (String(Substring(tail)), nil)
        }
    }
}
