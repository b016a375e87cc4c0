-- The teams' directory (issue 17): the "common" set of Realm's full-sync design. Every
-- signed-in user of an agency syncs its `agency=<key>` partition, so a server-written
-- collection there lists the agency's teams, with their members' public profiles, to all
-- of them — the way to discover a team before being given a right to open it.
-- Kept by repeatable/0061_team_directory.sql; the worker only reads it (write rule `server`).
insert into app.collections (name, table_name, partition_kind, write_rule) values
    ('teamDirectory', 'team_directory', 'agency', 'server');
select app.create_document_table('teamDirectory');
