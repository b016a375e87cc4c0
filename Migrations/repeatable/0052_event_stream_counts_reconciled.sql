-- Stream counts (0013) come from nchan's start and end hooks, and nginx drops a hook
-- without a word when it cannot reach a worker: when 10,000 streams close at once, the
-- workers' accept queues (4,096 each) overflow and about one end in seven was never
-- counted, leaving those users On-Line for a day. `tideway events` therefore asks nginx,
-- every half minute, how many streams each login really holds, and corrects the counts.

-- The logins to ask about: those counted as streaming, and those whose count moved lately
-- (a lost start hook). `counted_from` is the moment the question is asked: a hook that
-- commits later may know better than the answer, so its row is left alone.
create or replace function app.event_streams_to_check()
returns table (login_id uuid, open int, counted_from timestamptz)
language sql stable security definer set search_path = app, pg_temp as $$
    select s.login_id, s.open, now() from app.event_streams s
     where s.open > 0 or s.updated_at > now() - interval '10 minutes'
     order by s.login_id
$$;

-- Sets the counts nginx gave (one per login); returns how many logins' counts were wrong
-- and by how many streams in all (the starts and ends whose reports were lost). A count that
-- was right is only touched once an hour, so that a stream held for days is not taken
-- as dead by the sweep (which trusts counts updated within a day).
create or replace function app.reconcile_event_streams(logins uuid[], counts int[], counted_from timestamptz)
returns table (logins_wrong int, streams_missed int)
language plpgsql security definer set search_path = app, pg_temp as $$
begin
    -- Rows locked first: a hook that commits meanwhile moves updated_at past counted_from,
    -- and the re-checked condition then leaves its row alone. A count a hook set in the last
    -- 10 s is left alone too: nginx's own count of a new stream lags behind its hook.
    with given as (
        select g.login, g.open from unnest(logins, counts) as g(login, open) where g.open >= 0
    ), stale as (
        select s.login_id, given.open, abs(s.open - given.open) as missed
          from app.event_streams s join given on given.login = s.login_id
         where s.updated_at < counted_from - interval '10 seconds'
           and (s.open <> given.open or s.updated_at < now() - interval '1 hour')
         order by s.login_id
           for update of s
    ), fixed as (
        update app.event_streams s set open = stale.open, updated_at = now()
          from stale where s.login_id = stale.login_id
        returning stale.missed
    )
    select count(*) filter (where fixed.missed > 0)::int, coalesce(sum(fixed.missed), 0)::int
      into logins_wrong, streams_missed from fixed;
    return next;
end
$$;