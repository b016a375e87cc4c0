import Foundation

/// ISO 8601 UTC timestamps (`2024-03-05T14:22:10Z`) from whole epoch seconds.
///
/// Written out by hand because generating 100,000 reports with `ISO8601DateFormatter`
/// spends most of its time in the formatter; the calendar arithmetic is Howard
/// Hinnant's `civil_from_days`, exact for the proleptic Gregorian calendar.
package enum UTCTimestamp {
    package static func string(epochSeconds: Int64) -> String {
        let days = epochSeconds >= 0 ? epochSeconds / 86_400 : (epochSeconds - 86_399) / 86_400
        let secondOfDay = epochSeconds - days * 86_400
        let (year, month, day) = civilDate(daysSince1970: days)
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T"
            + pad(secondOfDay / 3600, 2) + ":" + pad(secondOfDay / 60 % 60, 2) + ":" + pad(secondOfDay % 60, 2) + "Z"
    }

    package static func string(_ date: Date) -> String {
        string(epochSeconds: epochSeconds(date))
    }

    /// With milliseconds (`2024-03-05T14:22:10.042Z`), for log lines.
    package static func millisecondString(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        let fraction = milliseconds - seconds * 1000
        return String(string(epochSeconds: seconds).dropLast()) + "." + pad(fraction, 3) + "Z"
    }

    package static func epochSeconds(_ date: Date) -> Int64 {
        Int64(date.timeIntervalSince1970.rounded(.down))
    }

    private static func civilDate(daysSince1970: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = daysSince1970 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153  // March = 0
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}
