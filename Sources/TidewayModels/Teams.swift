/// The team collections of docs/domain.md "Teams" (issue 17).

/// `tasks` (partition `team=<id>`), and an agency's `agencyTasks` (partition `agency=<key>`),
/// which name the `team` that gets a copy. `assignment` is set by the server on such a copy.
public struct TeamTask: Codable, Sendable, Hashable {
    public var _id: String
    public var title: String
    public var description: String?
    /// The name of one of the agency's protected areas (`mpas`), or a position.
    public var mpa: String?
    /// [longitude, latitude]
    public var position: [Double]?
    public var dueDate: String?
    /// The user id of the officer who should do it.
    public var assignee: String?
    /// `open`, `in progress` or `done`
    public var status: String
    public var notes: String?
    /// `agencyTasks` only: the id of the team that works on it.
    public var team: String?
    /// `tasks` only: where the server copied it from.
    public var assignment: Assignment?

    public struct Assignment: Codable, Sendable, Hashable {
        public var agency: String
    }
}

/// `teamNotes` (partition `team=<id>`).
public struct TeamNote: Codable, Sendable, Hashable {
    public var _id: String
    public var text: String
    public var author: String?
    public var timestamp: String
}

/// `teamDirectory` (partition `agency=<key>`, server-written): one team as every user of the
/// agency sees it before opening its partition. A joint task force is also listed in the
/// partitions of the other agencies it reaches, with `_id` `<team id>@<agency key>`.
public struct TeamListing: Codable, Sendable, Hashable {
    public var _id: String
    /// The team's id; its partition is `partition` (`team=<id>`).
    public var team: String
    public var partition: String
    public var name: String
    public var description: String?
    /// The owning agency: its admins manage the team.
    public var agency: String
    public var archived: Bool
    /// The users given a right by name, with their public profile.
    public var members: [Member]
    /// Rights given to a whole agency (`kind` `agency`) or to everyone signed in (`everyone`).
    public var openTo: [Opening]

    public struct Member: Codable, Sendable, Hashable {
        public var userId: String
        public var displayName: String?
        public var agency: String?
        /// `read`, `write` or `manage`
        public var right: String
    }

    public struct Opening: Codable, Sendable, Hashable {
        public var kind: String
        public var agency: String?
        public var right: String
    }
}
