import Foundation
import Support
import TidewayJSON

/// `dutyChanges` documents for an agency's officers: per officer, alternating `On Duty`
/// and `Off Duty` over the window, shifts of 6 to 14 hours on about four days a week.
/// A shift under way at `now` has only its `On Duty` (patrol hours count it up to now).
public struct DutyChangeGenerator {
    private let seed: UInt64
    private let officers: [DemoUser]
    private let nowSeconds: Int64
    private let days: Int
    private let utcOffsetHours: Int

    /// `utcOffsetHours` places shifts in local daytime (see `PatrolArea.utcOffsetHours`).
    public init(seed: UInt64, officers: [DemoUser], now: Date, days: Int = ReportGenerator.windowDays, utcOffsetHours: Int = 0) {
        self.seed = seed
        self.officers = officers
        self.nowSeconds = UTCTimestamp.epochSeconds(now)
        self.days = days
        self.utcOffsetHours = utcOffsetHours
    }

    /// All officers' changes, ordered by date (then email, for a stable order).
    public func changes() -> [JSON] {
        officers.flatMap(changes(of:)).sorted { ($0.seconds, $0.email) < ($1.seconds, $1.email) }.map(\.document)
    }

    private func changes(of officer: DemoUser) -> [(seconds: Int64, email: String, document: JSON)] {
        // One stream per officer: adding an officer leaves the others' shifts unchanged.
        var random = DemoRandom(seed: seed, stream: "dutyChanges/\(officer.email)")
        var result: [(seconds: Int64, email: String, document: JSON)] = []
        func record(_ seconds: Int64, _ status: String) {
            let document: JSON = [
                "_id": .string(random.objectID(epochSeconds: seconds)),
                "user": officer.reference,
                "date": .string(UTCTimestamp.string(epochSeconds: seconds)),
                "status": .string(status),
            ]
            result.append((seconds, officer.email, document))
        }

        let firstDay = (nowSeconds - Int64(days) * 86_400) / 86_400 + 1
        var day = firstDay + Int64(random.below(2))
        var restedUntil = Int64.min
        while true {
            // Mostly early-morning departures; one shift in five is a night patrol.
            let startHour = random.chance(0.8) ? random.int(in: 5...8) : random.int(in: 17...20)
            let localStart = Int64(startHour * 3600 + random.below(60) * 60)
            var start = day * 86_400 + localStart - Int64(utcOffsetHours * 3600)
            // A night patrol can run into the next morning: the next shift waits a day.
            while start < restedUntil {
                start += 86_400
                day += 1
            }
            if start >= nowSeconds { break }
            record(start, "On Duty")
            let end = start + Int64(random.int(in: 6 * 60...14 * 60) * 60)
            if end > nowSeconds { break }
            record(end, "Off Duty")
            restedUntil = end + 8 * 3600
            day += Int64(random.pick([1, 1, 1, 1, 2, 2, 2, 3]))  // about four shifts a week
        }
        return result
    }
}
