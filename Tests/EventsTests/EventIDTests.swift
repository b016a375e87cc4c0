import Testing
import Web

@testable import Events

/// The check of a reconnect's Last-Event-ID (EventID): nchan's form read and written back,
/// and where a stream of a given number of channels starts for each kind of id.
@Suite struct EventIDTests {
    static let now = 1_795_800_000

    func start(_ text: String?, channels: Int = 3) throws -> String? {
        try EventID.start(lastEventID: text, channels: channels, now: Self.now)?.text
    }

    @Test func nchansFormIsReadAndWrittenBackTheSame() throws {
        for text in ["1795799633:-,[0],-", "1795799633:[12],-,-", "1795799633:3,-,[32767],0", "1795799633:7", "1:-,[-]"] {
            #expect(EventID(text)?.text == text, "\(text)")
        }
        #expect(EventID("1795799633:-,[0],-") == EventID(time: 1_795_799_633, tags: [nil, 0, nil], active: 1))
        // A single tag may be bracketed; it is written without.
        #expect(EventID("1795799633:[4]")?.text == "1795799633:4")
    }

    @Test func anythingElseIsNotAnID() {
        let malformed = ["", ":", "1795799633", "1795799633:", "-1795799633:[0]", "0:[0]", "01795799633:[0]",
                         "1795799633:-,[0", "1795799633:-,0],-", "1795799633:-,0,-", "1795799633:[0],[1],-",
                         "1795799633:[],-", "1795799633:-,[32768],-", "1795799633:-,[-2],-", "1795799633:-,[007],-",
                         "1795799633:-,,[0]", "1795799633:-,[0],-,", " 1795799633:-,[0],-", "1795799633:-, [0],-",
                         "1795799633:-;[0];-", "1795799633:-,[0],-\u{0}", "1795799633:-,[０],-", "9999999999999999:[0]",
                         "abc", "1795799633:a,[0],-", String(repeating: "1", count: 2000),
                         "1795799633:[0]" + String(repeating: ",-", count: 600)]
        for text in malformed {
            #expect(EventID(text) == nil, "\(text.prefix(40))")
        }
    }

    @Test func anIDOfTheStreamsChannelsIsPassedOnAsItIs() throws {
        #expect(try start("1795799633:-,[0],-") == "1795799633:-,[0],-")
        #expect(try start("1795799633:5,-,[2],-", channels: 4) == "1795799633:5,-,[2],-")
    }

    @Test func noIDStartsWithWhatHappensNext() throws {
        #expect(try start(nil) == nil)
        #expect(try start("") == nil)
    }

    @Test func garbageIsABadRequest() {
        for text in ["garbage", "1795799633:-,[0", String(repeating: "9", count: 5000), "1795799633:-,[0],-\n"] {
            #expect(throws: AppError.self) { try start(text) }
        }
    }

    /// A login gained or lost a partition since its last connection: the id's time is kept,
    /// with no tag, for every channel of the new stream.
    @Test func anIDOfAnotherSetOfChannelsKeepsItsTimeOnly() throws {
        #expect(try start("1795799633:-,[0],-", channels: 4) == "1795799633:[-],-,-,-")
        #expect(try start("1795799633:-,3,[0],-", channels: 3) == "1795799633:[-],-,-")
        #expect(try start("1795799633:7", channels: 3) == "1795799633:[-],-,-")
    }

    @Test func anIDAheadOfTheClockIsDropped() throws {
        #expect(try start("\(Self.now + 61):-,[0],-") == nil)
        #expect(try start("\(Self.now + 60):-,[0],-") == "\(Self.now + 60):-,[0],-")
    }

    /// nchan ignores an id longer than 128 bytes: a stream of the most partitions gets one it reads.
    @Test func whatNchanIsGivenFitsWhatItReads() throws {
        let channels = EventRoutes.maxPartitions + 2
        let long = "1795799633:" + (0..<channels).map { $0 == 1 ? "[32767]" : "32767" }.joined(separator: ",")
        #expect(long.utf8.count > EventID.nchanReadLimit)
        let given = try #require(try start(long, channels: channels))
        #expect(given.utf8.count <= EventID.nchanReadLimit)
        #expect(given == "1795799633:[-]" + String(repeating: ",-", count: channels - 1))
    }
}
