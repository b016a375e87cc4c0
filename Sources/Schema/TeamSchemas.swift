/// Team collections (issue 17, domain.md "Teams"): an agency's tasks (`agencyTasks`, partition
/// `agency=<key>`), which the server copies into the team they name, and the team's own
/// `tasks` and `teamNotes` (partition `team=<id>`). Who may write what, and the copies'
/// `assignment`, are the database's rules (Migrations/repeatable/0060).
enum TeamSchemas {
    static let all = [agencyTasks, tasks, teamNotes, teamDirectory]

    static let status: Schema = .oneOf(["open", "in progress", "done"])

    /// The fields of a task, wherever it lives.
    static let taskFields: [String: Schema.Field] = [
        "title": .required(.string),
        "description": .optional(.string),
        /// The name of a protected area (the agency's `mpas`), or a position.
        "mpa": .optional(.string),
        "position": .optional(.lonLat),
        "dueDate": .optional(.date),
        /// The user id of the officer who should do it.
        "assignee": .optional(.string),
        "status": .required(status),
        "notes": .optional(.string),
    ]

    static let agencyTasks = CollectionSchema(
        name: "agencyTasks",
        fields: taskFields.merging([
            /// The id of the agency's team that gets a copy (none: not assigned yet).
            "team": .optional(.string),
        ]) { a, _ in a })

    static let tasks = CollectionSchema(
        name: "tasks",
        fields: taskFields.merging([
            /// Set by the server on the copy of an agency's task; clients never write it.
            "assignment": .optional(.object(["agency": .required(.string)])),
        ]) { a, _ in a })

    static let teamNotes = CollectionSchema(
        name: "teamNotes",
        fields: [
            "text": .required(.string),
            "author": .optional(.string),
            "timestamp": .required(.date),
        ])

    /// Written by the database alone (Migrations/repeatable/0061): clients are refused before
    /// their document is checked. The shape is what the server writes.
    static let right: Schema = .oneOf(["read", "write", "manage"])
    static let teamDirectory = CollectionSchema(
        name: "teamDirectory",
        fields: [
            "team": .required(.string),
            "partition": .required(.string),
            "name": .required(.string),
            "description": .optional(.string),
            "agency": .required(.string),
            "archived": .required(.bool),
            "members": .required(.array(.object([
                "userId": .required(.string),
                "displayName": .optional(.string),
                "agency": .optional(.string),
                "right": .required(right),
            ]))),
            "openTo": .required(.array(.object([
                "kind": .required(.oneOf(["agency", "everyone"])),
                "agency": .optional(.string),
                "right": .required(right),
            ]))),
        ])
}
