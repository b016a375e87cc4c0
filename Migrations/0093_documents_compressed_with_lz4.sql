-- Write path (issue 22): a report (~2.3 KB of JSON) is stored compressed twice in its
-- INSERT, as the document and as its first history entry's `change`, and PostgreSQL's own
-- compressor (pglz) was 7% of the backend's CPU in pushes of 25 (perf, docs/performance/round-04.md).
-- LZ4 compresses several times faster (and decompresses faster for pulls) at a similar ratio.
-- Only new values are compressed so; stored ones stay as they are and read alike.
-- A PostgreSQL built without LZ4 keeps pglz (the setting is then refused).
do $$
begin
    alter table sync.reports alter column doc set compression lz4;
    alter table app.report_history alter column change set compression lz4;
exception when feature_not_supported then
    raise notice 'PostgreSQL without lz4: documents stay compressed with pglz';
end
$$;
