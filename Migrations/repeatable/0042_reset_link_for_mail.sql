-- The forgotten-password form mails its link (issue 7): it needs the address as stored
-- and the person's name, which the anonymous caller cannot read. Same rules as
-- app.issue_reset_by_email (0040): active users only, earlier live links spent.
create or replace function app.issue_reset_for_mail(login_email text, link_hash bytea, ttl_seconds int)
returns table (user_id uuid, email text, name text)
language plpgsql security definer set search_path = app, pg_temp as $$
declare
    found_id uuid;
begin
    found_id := app.issue_reset_by_email(login_email, link_hash, ttl_seconds);
    return query
    select u.id, u.email,
           coalesce(nullif(u.display_name, ''), trim(u.first_name || ' ' || u.last_name))
      from app.users u where u.id = found_id;
end
$$;