-- Dashboards (issue 8): patrol time. The report facts are stored generated columns of
-- sync.reports (0050_dashboard_facts.sql); duty changes carry who, when and status.

-- Patrol time, defined once (domain.md, dutyChanges): per user (told apart by e-mail,
-- case-insensitive; `user_email` null: every user of the agency), the intervals from an
-- On Duty change to the next Off Duty change (statuses are normalized at write time: At
-- Sea -> On Duty, On Land -> Off Duty; repeated
-- statuses in a row do not start a new interval; an open interval runs up to now),
-- clipped to [from_at, to_at). Hours and days on patrol are both read from it. Runs with
-- the caller's rights: row-level security decides which agencies it can see.
create or replace function app.patrol_intervals(agency_key text, user_email text, from_at timestamptz, to_at timestamptz)
returns table (who text, started timestamptz, ended timestamptz)
language sql stable as $$
    with changes as (
        select duty_who as who, duty_at as at, duty_status as status, id
          from sync.duty_changes
         where partition = 'agency=' || agency_key and not deleted and duty_at is not null
           and (user_email is null or duty_who = lower(user_email))
    ), flips as (
        select who, at, status, id, lag(status) over (partition by who order by at, id) as before
          from changes
    ), transitions as (
        select who, at, status, lead(at) over (partition by who order by at, id) as next_at
          from flips
         where before is distinct from status
    )
    select who, greatest(at, from_at), least(coalesce(next_at, now()), to_at)
      from transitions
     where status = 'On Duty' and least(coalesce(next_at, now()), to_at) > greatest(at, from_at)
$$;

-- Patrol hours for dashboards.
create or replace function app.patrol_hours(agency_key text, user_email text, from_at timestamptz, to_at timestamptz)
returns double precision
language sql stable as $$
    select coalesce(sum(extract(epoch from ended - started)), 0)::double precision / 3600
      from app.patrol_intervals(agency_key, user_email, from_at, to_at)
$$;

-- Days on patrol: calendar days (UTC) on which some patrol interval was running.
create or replace function app.patrol_days(agency_key text, user_email text, from_at timestamptz, to_at timestamptz)
returns integer
language sql stable as $$
    select count(distinct day)::integer
      from app.patrol_intervals(agency_key, user_email, from_at, to_at) i,
           generate_series(date_trunc('day', i.started at time zone 'UTC'),
                           (i.ended at time zone 'UTC') - interval '1 microsecond', interval '1 day') day
$$;
