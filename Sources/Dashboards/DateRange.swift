import Foundation
import Web

/// The dashboards' date range: whole UTC days, `from` and `to` both included, given as
/// `YYYY-MM-DD` in the query (a GET form); by default the last 12 months up to today.
public struct DateRange: Sendable, Equatable {
    /// First day, included, as `YYYY-MM-DD`.
    public let from: String
    /// Last day, included, as `YYYY-MM-DD`.
    public let to: String

    /// Midnight UTC of the first day, ISO 8601: the range's start, included.
    public var startAt: String { from + "T00:00:00Z" }
    /// Midnight UTC after the last day: the range's end, excluded.
    public var endAt: String { DateRange.format(DateRange.parse(to)!.addingTimeInterval(86_400)) + "T00:00:00Z" }

    static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()

    /// Reads `from` and `to` from the query; missing ones take the default. Bad dates and
    /// a `from` after `to` are the caller's mistake (400).
    public static func from(query: [String: String], today: Date = Date()) throws -> DateRange {
        let todayText = format(today)
        let toText = query["to"].flatMap { $0.isEmpty ? nil : $0 } ?? todayText
        guard let toDate = parse(toText) else { throw AppError.badRequest("`to` must be a date like 2026-01-31") }
        let defaultFrom = utc.date(byAdding: DateComponents(year: -1, day: 1), to: toDate)!
        let fromText = query["from"].flatMap { $0.isEmpty ? nil : $0 } ?? format(defaultFrom)
        guard let fromDate = parse(fromText) else { throw AppError.badRequest("`from` must be a date like 2025-02-01") }
        guard fromDate <= toDate else { throw AppError.badRequest("`from` must not be after `to`") }
        return DateRange(from: format(fromDate), to: format(toDate))
    }

    /// Strict `YYYY-MM-DD` (a real calendar day) to midnight UTC.
    static func parse(_ text: String) -> Date? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
              parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
              let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]), y >= 1900, y <= 9999
        else { return nil }
        let components = DateComponents(year: y, month: m, day: d)
        guard let date = utc.date(from: components),
              utc.dateComponents([.year, .month, .day], from: date) == DateComponents(year: y, month: m, day: d)
        else { return nil }
        return date
    }

    static func format(_ date: Date) -> String {
        let c = utc.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", c.year!, c.month!, c.day!)
    }
}
