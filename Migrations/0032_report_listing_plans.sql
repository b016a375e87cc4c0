-- run as superuser
-- Query plans for the boardings list under row-level security. PostgreSQL evaluates the
-- policies' quals before any user condition that is not LEAKPROOF, so such a condition can
-- never be an index condition: the text search (@@) would scan every report of every agency.
-- ts_match_vq (tsvector @@ tsquery) only compares its arguments and raises no error that
-- depends on them, which is what LEAKPROOF promises; marking it so needs a superuser.
alter function pg_catalog.ts_match_vq(tsvector, tsquery) leakproof;

-- An agency's reports by date: the default page (index order, no sort) and its count (an
-- index-only scan of one partition, instead of a scan of every agency's wide rows).
create index reports_partition_date on sync.reports (partition, boarded_at, id) where not deleted;
