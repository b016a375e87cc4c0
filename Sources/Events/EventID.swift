import Web

/// An event's `id:` as nchan writes it, which a reconnecting client sends back as
/// `Last-Event-ID`: "<time>:<tag>,<tag>,…" (src/util/nchan_msg.c, nchan_parse_compound_msgid),
/// the time in seconds, one tag per channel of the stream in its channel id's order (a number,
/// or "-" for none), the event's own tag bracketed: "1795799633:-,[0],-".
///
/// Why the worker reads it and nchan never does: nchan 1.3.6 parses the client's text with no
/// bound (16-bit tags that overflow, a static array of 255 tags shared by every parse), gives
/// its own bare 400 for an id with another number of tags than the stream has channels (routine:
/// a login gained or lost a partition since its last connection), and once killed an nginx
/// worker among such reconnects (`ngx_slab_free(): chunk is already free`). So the worker
/// checks the id, and hands nchan one it wrote itself, or none. docs/performance/round-18.md,
/// "A stream's Last-Event-ID checked by the worker".
package struct EventID: Equatable, Sendable {
    /// When nginx published the event, in seconds since 1970 (the instance's clock).
    package var time: Int
    /// One per channel of the stream; nil: no event of that channel yet ("-").
    package var tags: [Int?]
    /// The index in `tags` of the event's own channel.
    package var active: Int

    /// Longer than any id of a stream of `EventRoutes.maxPartitions` (52 channels with 5-digit
    /// tags: 431 bytes); anything longer is not an id of this server.
    static let maxLength = 1024
    /// nchan's tags are 16-bit.
    static let maxTag = 32767
    /// nchan reads at most 128 bytes of the id it is given (nchan_subscriber_get_msg_id) and
    /// ignores a longer one.
    static let nchanReadLimit = 128
    /// An id this far ahead of the worker's clock is not one of this server's: nchan would wait
    /// for events after it, so the events of the coming minutes would not reach the stream.
    static let aheadLimit = 60

    package init(time: Int, tags: [Int?], active: Int) {
        (self.time, self.tags, self.active) = (time, tags, active)
    }

    /// nchan's form; nil for anything else (empty, too long, other characters, a tag out of
    /// range, no or two bracketed tags).
    package init?(_ text: String) {
        guard text.utf8.count <= Self.maxLength,
              let colon = text.utf8.firstIndex(of: UInt8(ascii: ":")),
              let time = Self.number(text.utf8[..<colon], digits: 15), time > 0 else { return nil }
        var tags: [Int?] = []
        var active: Int?
        for field in text.utf8[text.utf8.index(after: colon)...].split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
            var tag = field[...]
            if tag.first == UInt8(ascii: "["), tag.last == UInt8(ascii: "]"), tag.count > 2 {
                guard active == nil else { return nil }
                active = tags.count
                tag = tag.dropFirst().dropLast()
            }
            if tag.elementsEqual("-".utf8) {
                tags.append(nil)
            } else if let value = Self.number(tag, digits: 5), value <= Self.maxTag {
                tags.append(value)
            } else {
                return nil
            }
        }
        // One tag needs no brackets; of several, exactly one is the event's.
        guard let active = active ?? (tags.count == 1 ? 0 : nil) else { return nil }
        self.init(time: time, tags: tags, active: active)
    }

    /// A decimal number of 1 to `digits` digits, no sign, no leading zero.
    private static func number(_ bytes: Substring.UTF8View.SubSequence, digits: Int) -> Int? {
        guard (1...digits).contains(bytes.count), bytes.allSatisfy({ (48...57).contains($0) }),
              bytes.count == 1 || bytes.first != UInt8(ascii: "0") else { return nil }
        return bytes.reduce(0) { $0 * 10 + Int($1 - 48) }
    }

    /// nchan's form of the id.
    package var text: String {
        let fields = tags.enumerated().map { index, tag in
            let value = tag.map(String.init) ?? "-"
            return index == active && tags.count > 1 ? "[" + value + "]" : value
        }
        return String(time) + ":" + fields.joined(separator: ",")
    }

    /// Where a stream of `channels` channels starts, for the client's `Last-Event-ID`: nil
    /// for none (nchan's default, what happens next); the id itself when it fits the stream;
    /// else the id's time with no tag, which makes nchan replay the events of every channel
    /// from that second on (at worst a second copy of events the client had: the contract
    /// says it ignores them). Why dropping or widening loses nothing: the client pulls every
    /// partition as the stream opens (docs/sync-protocol.md, "Change events"), so a replay only
    /// spares it pulls; what it must not do is skip events published after the stream opened,
    /// which an id ahead of the clock would (so such an id is dropped).
    /// Throws 400 `bad_request` for anything that is not nchan's form.
    package static func start(lastEventID: String?, channels: Int, now: Int) throws -> EventID? {
        guard let lastEventID, !lastEventID.isEmpty else { return nil }
        guard let id = EventID(lastEventID) else {
            throw AppError.badRequest("Last-Event-ID is not an event id of this server")
        }
        guard id.time <= now + aheadLimit else { return nil }
        if id.tags.count == channels, id.text.utf8.count <= nchanReadLimit {
            return id
        }
        // Another set of channels (its partitions changed), or too long for nchan to read:
        // 52 channels of "-" are 116 bytes.
        return EventID(time: id.time, tags: Array(repeating: nil, count: channels), active: 0)
    }
}
