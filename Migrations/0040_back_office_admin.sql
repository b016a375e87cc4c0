-- Back office administration (issue 7): the audit log, one-time account links
-- (invitations and password resets), and what agency admins may read about their users.

-- Every admin action: who, what, when, from where. Written in the same transaction as the
-- action by the acting user (the policy holds them to their own id); read by global admins.
create table app.audit_log (
    id bigserial primary key,
    at timestamptz not null default now(),
    actor uuid not null default app.uid(),
    actor_email text not null default '',
    action text not null check (length(action) between 1 and 100),
    target text not null default '',
    detail jsonb not null default '{}',
    address text not null default ''
);
create index audit_log_at on app.audit_log (at desc);
alter table app.audit_log enable row level security;
alter table app.audit_log force row level security;
grant select, insert on app.audit_log to tideway_worker;
grant usage on sequence app.audit_log_id_seq to tideway_worker;

-- One-time links that let a person set a password: an invitation for a new user or a
-- reset. Only the SHA-256 of the token is kept; a link is spent by its first use.
create table app.account_links (
    hash bytea primary key check (length(hash) = 32),
    user_id uuid not null references app.users (id),
    purpose text not null check (purpose in ('invite', 'reset')),
    created_at timestamptz not null default now(),
    created_by uuid,
    expires_at timestamptz not null,
    used_at timestamptz
);
create index account_links_user on app.account_links (user_id);
alter table app.account_links enable row level security;
alter table app.account_links force row level security;
