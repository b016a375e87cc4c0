import Database
import TidewayJSON

/// Demo teams (issue 17): per sample agency a boat crew and a night patrol, and one joint
/// task force across the first two agencies, each with grants to the agency's logins and a
/// few tasks: some the agency assigned (copied into the team by the database), some the
/// team wrote itself, and a note. Fixed ids (derived from the agency key), so a second run
/// changes nothing.
struct DemoTeams {
    let connection: Connection

    /// Answers how many teams were new.
    func seed(agencyKeys: [String], now: String) throws -> Int {
        var created = 0
        try connection.transaction { tx in
            for (index, key) in agencyKeys.enumerated() {
                created += try team(tx, key: key, slot: "crew", name: "\(key) boat crew",
                                    grants: [("officer", 0, "write"), ("officer", 1, "read")], everyoneOfAgency: nil, now: now)
                created += try team(tx, key: key, slot: "night", name: "\(key) night patrol",
                                    grants: [("officer", 1, "write")], everyoneOfAgency: "read", now: now)
                if index == 1 {
                    // The joint task force: owned by the first agency, officers of both write.
                    created += try team(tx, key: agencyKeys[0], slot: "joint", name: "Joint task force \(agencyKeys[0]) – \(key)",
                                        grants: [("officer", 0, "write")], everyoneOfAgency: nil, now: now,
                                        partner: key)
                }
            }
        }
        return created
    }

    private func team(_ tx: Transaction, key: String, slot: String, name: String, grants: [(String, Int, String)],
                      everyoneOfAgency: String?, now: String, partner: String? = nil) throws -> Int {
        let seedText = "demo-team-\(key)-\(slot)"
        let inserted = try tx.query("""
            insert into app.teams (id, agency, name, description, created_by)
            select md5(\(seedText))::uuid, \(key), \(name), 'Demo team', (select id from app.users where agency = \(key)
                   and role = 'agencyAdmin' order by email limit 1)
            on conflict (id) do nothing returning id
            """).affected
        guard inserted > 0 else { return 0 }
        let partition = "team=" + (try tx.query("select md5(\(seedText))::uuid::text as id").first?["id"] ?? "")
        var members: [(String, String, Int, String)] = [(key, "agencyAdmin", 0, "manage")]
        members += grants.map { (key, $0.0, $0.1, $0.2) }
        if let partner {
            members += [(partner, "agencyAdmin", 0, "manage"), (partner, "officer", 0, "write")]
        }
        for (agency, role, ordinal, right) in members {
            _ = try tx.query("""
                insert into app.grants (partition, grantee_kind, grantee, "right")
                select \(partition), 'user', id::text, \(right) from app.users
                 where agency = \(agency) and role = \(role) and active order by email offset \(ordinal) limit 1
                on conflict do nothing
                """)
        }
        if let everyoneOfAgency {
            _ = try tx.query("""
                insert into app.grants (partition, grantee_kind, grantee, "right") values (\(partition), 'agency', \(key), \(everyoneOfAgency))
                on conflict do nothing
                """)
        }
        let teamID = String(partition.dropFirst(5))
        let agencyPartition = "agency=" + key
        // Two tasks the agency assigns (the database copies them into the team) ...
        for (n, (title, status)) in [("Inspect the longliners at the reef edge", "open"), ("Check licences in port", "done")].enumerated() {
            let id = "demo-task-\(slot)-\(n)-" + teamID.prefix(8)
            let doc: JSON = ["_id": .string(id), "title": .string(title), "status": .string(status), "team": .string(teamID),
                             "dueDate": .string(now), "description": "Demo task assigned by the agency"]
            _ = try tx.query("""
                insert into sync.agency_tasks (id, partition, doc, seq) values (\(id), \(agencyPartition), \(doc.serialized())::jsonb,
                       app.tick(\(agencyPartition))) on conflict (id) do nothing
                """)
        }
        // ... one the team wrote itself, and a note.
        let own = "demo-own-\(slot)-" + teamID.prefix(8)
        let task: JSON = ["_id": .string(own), "title": "Refuel and check the radio", "status": "in progress"]
        let noteID = "demo-note-\(slot)-" + teamID.prefix(8)
        let note: JSON = ["_id": .string(noteID), "text": "Weather window closes Thursday.", "timestamp": .string(now)]
        _ = try tx.query("""
            insert into sync.tasks (id, partition, doc, seq) values (\(own), \(partition), \(task.serialized())::jsonb, app.tick(\(partition)))
            on conflict (id) do nothing
            """)
        _ = try tx.query("""
            insert into sync.team_notes (id, partition, doc, seq) values (\(noteID), \(partition), \(note.serialized())::jsonb, app.tick(\(partition)))
            on conflict (id) do nothing
            """)
        return 1
    }
}
