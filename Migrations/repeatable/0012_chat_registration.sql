-- Self sign-up for chat (off unless the server enables it): a chat-only account with no
-- agency. No claims exist yet, so the insert runs as the owner, and can do nothing else.
create or replace function app.register_user(new_email text, new_password_hash text, new_display_name text) returns uuid
language sql security definer set search_path = app, pg_temp as $$
    insert into app.users (email, password_hash, display_name, role, agency)
    values (new_email, new_password_hash, new_display_name, 'officer', null)
    returning id
$$;