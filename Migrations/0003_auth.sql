-- A login is one sign-in of one user on one device (or browser): the family of tokens
-- that refresh rotation produces. Revoking the login ends every token of it at once.
create table app.logins (
    id uuid primary key default gen_random_uuid(),
    user_id uuid not null references app.users (id),
    kind text not null check (kind in ('api', 'web')),
    device text not null default '',
    created_at timestamptz not null default now(),
    revoked_at timestamptz,
    revoked_reason text
);
create index logins_user on app.logins (user_id) where revoked_at is null;

-- Tokens are random 32-byte strings handed to the client once; only their SHA-256 is kept.
create table app.tokens (
    hash bytea primary key check (length(hash) = 32),
    login_id uuid not null references app.logins (id) on delete cascade,
    kind text not null check (kind in ('access', 'refresh', 'session')),
    expires_at timestamptz not null,
    -- A refresh token is spent by one refresh; presenting it again means it was stolen.
    spent_at timestamptz
);
create index tokens_login on app.tokens (login_id);

-- Failed sign-ins per email and per address, for the rate limit.
create table app.login_failures (
    key text not null,
    at timestamptz not null default now()
);
create index login_failures_key on app.login_failures (key, at);

alter table app.logins enable row level security;
alter table app.logins force row level security;
alter table app.tokens enable row level security;
alter table app.tokens force row level security;
alter table app.login_failures enable row level security;
alter table app.login_failures force row level security;

