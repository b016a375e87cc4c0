-- Two index entries less per written report, each for an index whose readers need less
-- (issue 22, twenty-first round; docs/performance/round-21.md, "The indexes a
-- report's push writes, and their readers").
--
-- app.report_history (partition, at): no statement of Tideway's reads it. The history is read
-- by report (the back office's timeline, Boardings/BoardingHistory.swift; the trigger's last
-- hash, repeatable/0020; the import's probe and clean-up, repeatable/0090 and
-- TidewayImport/Importer.swift) and by (report_id, id) in `tideway verify-history`
-- (Patrol/HistoryChain.swift): all through report_history_chain, row-level security's
-- partition test a filter on those few rows. Every report write paid its entry.
drop index app.report_history_partition;

-- app.push_log (at desc): its one reader is the sync inspector's latest refused changes
-- (Administration/SyncInspector.swift: `where result->>'status' = 'rejected' order by at desc
-- limit 100`); the per-device count of refusals goes by the primary key (user_id, client_id).
-- Every change a push applies writes a log row, and nearly all are accepted: the index now
-- holds the refused ones only, which is all that read wants, and an accepted change's row
-- writes no entry in it. The predicate is the read's own condition, so the planner proves it.
create index push_log_rejected_at on app.push_log (at desc) where result ->> 'status' = 'rejected';
drop index app.push_log_at;
