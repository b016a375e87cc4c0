-- Patrol hours for dashboards (domain.md, dutyChanges): per user, the sum of the intervals
-- from an On Duty change to the next Off Duty change, clipped to [from_at, to_at); an
-- interval still open counts up to now. Statuses are already normalized at write time
-- (At Sea -> On Duty, On Land -> Off Duty). Repeated On (or Off) changes in a row do not
-- start a new interval: only changes of status count. Users are told apart by e-mail
-- (case-insensitive); `user_email` null sums every user of the agency.
-- Runs with the caller's rights: row-level security decides which agencies it can see.
create function app.patrol_hours(agency_key text, user_email text, from_at timestamptz, to_at timestamptz)
returns double precision
language sql stable as $$
    with changes as (
        select coalesce(lower(doc -> 'user' ->> 'email'), (doc -> 'user' -> 'name')::text, '') as who,
               (doc ->> 'date')::timestamptz as at, doc ->> 'status' as status, id
          from sync.duty_changes
         where partition = 'agency=' || agency_key and not deleted
           and (user_email is null or lower(doc -> 'user' ->> 'email') = lower(user_email))
    ), flips as (
        select who, at, status, id,
               lag(status) over (partition by who order by at, id) as before
          from changes
    ), transitions as (
        select who, at, status,
               lead(at) over (partition by who order by at, id) as next_at
          from flips
         where before is distinct from status
    )
    select coalesce(sum(extract(epoch from
               least(coalesce(next_at, now()), to_at) - greatest(at, from_at))
           ) filter (where least(coalesce(next_at, now()), to_at) > greatest(at, from_at)), 0)::double precision / 3600
      from transitions
     where status = 'On Duty'
$$;
