-- Dashboards (issue 8): daily summaries of each agency's boardings, kept by the write
-- path. A report's write adds its contribution (the facts of 0050) to the rows of its UTC
-- day and takes the old contribution away, in the writing transaction, so a dashboard
-- reads a few hundred small rows instead of every boarding of the range and is never
-- stale after a write. The date range of a dashboard is whole UTC days (DateRange.swift),
-- so sums of days answer it exactly.
--
-- Concurrency: every write of a report ticks its partition's clock first (app.tick in
-- the INSERT/UPDATE itself), which stays locked until commit, so only one transaction at
-- a time changes a partition's summary rows: no lost updates, no deadlocks between them.
--
-- The rows' definitions are the *_computed views of repeatable/0051 (the same sums,
-- straight from the reports); the tests compare the two.

-- Per agency, day and safety level: the counts of the agency charts.
create table app.boarding_days (
    partition text not null,
    day date not null,
    safety_level text not null,
    boardings integer not null,
    compliant integer not null,
    warnings integer not null,
    citations integer not null,
    located integer not null,
    -- Bounds of the located boardings (for fitting the map); null when none.
    west double precision, east double precision, south double precision, north double precision,
    primary key (partition, day, safety_level)
);

-- Per agency, day and officer (by e-mail, lower case; '' for a report without one):
-- the officers chart and each officer's own dashboard.
create table app.officer_days (
    partition text not null,
    day date not null,
    officer_email text not null,
    boardings integer not null,
    compliant integer not null,
    warnings integer not null,
    citations integer not null,
    located integer not null,
    west double precision, east double precision, south double precision, north double precision,
    primary key (partition, day, officer_email)
);

-- Per agency and day: violations by code ('code': entries = violations) and catch by
-- species ('fish': amount = kilograms). Numeric, so that adding and taking away is exact.
create table app.tally_days (
    partition text not null,
    day date not null,
    kind text not null check (kind in ('code', 'fish')),
    key text not null,
    entries integer not null,
    amount numeric not null,
    primary key (partition, day, kind, key)
);

-- Read with the reports' rule (repeatable/0004): one's own agency, or every agency for global admins.
alter table app.boarding_days enable row level security;
alter table app.boarding_days force row level security;
alter table app.officer_days enable row level security;
alter table app.officer_days force row level security;
alter table app.tally_days enable row level security;
alter table app.tally_days force row level security;
grant select on app.boarding_days, app.officer_days, app.tally_days to tideway_worker;

-- What one version of a report adds to the summaries (sign 1) or takes away (sign -1):
-- its facts, without the document. `day` is null for a report that is not a boarding (a
-- draft, a tombstone, no date), which counts nowhere.
create type app.boarding_delta as (
    sign integer, partition text, day date, safety_level text, officer_email text,
    warnings integer, citations integer, located boolean, lon double precision, lat double precision,
    violation_codes text[], catch_species text[], catch_kg double precision[]);
