import Database

/// A device's cursor age: how long ago the oldest change it has not pulled yet was written
/// (app.oldest_unpulled, from where its cursors stood after its last pull), "up to date"
/// when it has everything, "—" when it never pulled naming its clientId.
enum CursorAge {
    /// Columns for a query over `app.devices d`.
    static var columns: SQL {
        """
        d.last_pull is not null as pulled,
        extract(epoch from now() - app.oldest_unpulled(d.user_id, d.pulled_through))::bigint as behind_seconds
        """
    }

    static func text(_ row: Row) -> String {
        guard row.bool("pulled") == true else { return "—" }
        guard let seconds = row.int("behind_seconds") else { return "up to date" }
        return "behind by " + duration(max(0, seconds))
    }

    static func duration(_ seconds: Int) -> String {
        let minutes = seconds / 60, hours = minutes / 60, days = hours / 24
        if days > 0 { return "\(days) d \(hours % 24) h" }
        if hours > 0 { return "\(hours) h \(minutes % 60) min" }
        if minutes > 0 { return "\(minutes) min" }
        return "under a minute"
    }
}
