import Testing

@testable import Events

/// The names of a stream's channels (EventChannels): what nginx's /_events/ location accepts
/// (Deploy/nginx/tideway.conf.template: lowercase letters, digits and commas).
@Suite struct EventChannelsTests {
    static let allowed = Set("0123456789abcdefghijklmnopqrstuvwxyz")

    @Test func aStreamsOwnChannelIsRAnd32HexDigitsAndNeverTheSameTwice() {
        let names = (0..<1000).map { _ in EventChannels.stream() }
        #expect(Set(names).count == names.count)
        for name in names {
            #expect(name.count == 33 && name.first == "r", "\(name)")
            #expect(name.dropFirst().allSatisfy { $0.isHexDigit && !$0.isUppercase }, "\(name)")
        }
    }

    @Test func everyChannelIsMadeOfWhatTheLocationAccepts() {
        let names = [EventChannels.login("0F3A2B4C-1D2E-4F50-8A9B-0C1D2E3F4A5B"), EventChannels.partition("agency=Gabon"),
                     EventChannels.stream()]
        for name in names {
            #expect(name.allSatisfy(Self.allowed.contains), "\(name)")
        }
        #expect(names[0].count == 33 && names[1].count == 31)
    }
}
