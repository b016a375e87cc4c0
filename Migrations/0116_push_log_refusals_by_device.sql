-- The sync inspector's device list counts each device's refused changes of the last 7 days
-- (Administration/SyncInspector.swift, `rejections`): a probe per listed device, up to 200.
-- By the primary key (user_id, client_id, change_id) each probe read every change the device
-- ever pushed and tested each entry's status and time: ~45 ms for a global admin's page over a
-- push log of 1,000,000 entries, growing with the log, which is never pruned
-- (docs/performance/round-21.md, "The sync inspector's device list"). Of refused changes only,
-- as push_log_rejected_at (0115), this index costs an accepted change's write nothing, and each
-- probe reads the device's refusals of those 7 days alone. The predicate is the count's own
-- condition, so the planner proves it.
create index push_log_rejected_by_device on app.push_log (user_id, client_id, at)
    where result ->> 'status' = 'rejected';
