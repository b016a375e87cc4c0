-- run as superuser
-- The job runner's summary fold (repeatable/0051) at the lowest CPU priority, Linux's
-- SCHED_IDLE (`tideway jobs --fold-priority`, docs/operations.md): its backend then runs only
-- on a core nothing else wants and gives it up to any process the moment one wakes, so a fold
-- turn does not compete with the writes it lands on. Safe because no writer ever waits for a
-- fold's locks (0051: a fold locks only its watermark rows and the summaries, which only
-- folds write); the runner's jobs, which tick partition clocks that writers wait for, keep a
-- connection at normal priority.
--
-- The backend lowers itself through a child it runs: the child is the postgres user, like
-- the backend, so no capability is needed, and it runs where the database runs, whichever
-- host the runner is on. COPY TO PROGRAM needs a superuser, hence this file's owner; the
-- command is a fixed string whose one operand is the child's parent, the calling backend,
-- so a caller can lower only its own backend. Only the worker role (the runner's) may call it.
create or replace function app.lower_fold_priority(priority text) returns void
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    if priority <> 'idle' then
        raise exception 'fold priority %: only idle is known', priority;
    end if;
    copy (select where false) to program 'exec chrt --idle --pid 0 "$PPID"';
end
$$;
revoke all on function app.lower_fold_priority(text) from public;
grant execute on function app.lower_fold_priority(text) to tideway_worker;
