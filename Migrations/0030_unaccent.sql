-- run as superuser
-- Accent- and case-insensitive text for the boardings search and sort keys. The unaccent
-- extension needs a superuser; its function is only STABLE (it reads a dictionary that a
-- superuser could change), so an IMMUTABLE wrapper that names the dictionary explicitly
-- is what generated columns and indexes may use.
create extension if not exists unaccent with schema public;

create function app.fold(t text) returns text
language sql immutable strict parallel safe as $$
    select lower(public.unaccent('public.unaccent'::regdictionary, t))
$$;
alter function app.fold(text) owner to tideway_owner;
