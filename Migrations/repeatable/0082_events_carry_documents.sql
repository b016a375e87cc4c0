-- Events that carry the documents (sync-protocol.md, "Change events"; the table is in
-- 0082_events_carry_documents.sql).

-- The claims of a reader of partition `p`, set for the rest of the transaction, and
-- whether that reader may read `p` (app.can_read). The event publisher reads a
-- partition's new changes with these claims, through the pull's own query, so that it
-- sees exactly what the partition's readers see: every read policy of the synced
-- collections admits a whole partition or none of it (repeatable/0004), so any reader of
-- `p` sees the same documents as any other, and as every subscriber of its channel (each
-- was checked with app.can_read when it subscribed). The reader chosen is the narrowest
-- one: an agency's member, the user, a signed-in user, an active member of the
-- conversation, an admin of the agency that owns the team. No reader (a conversation
-- without members): false, and the event stays thin.
create or replace function app.claim_reader_of(p text) returns boolean
language plpgsql volatile security definer set search_path = app, pg_temp as $$
declare
    nobody constant text := '00000000-0000-0000-0000-000000000000';
    reader text;
begin
    perform set_config('tideway.user_id', '', true), set_config('tideway.role', 'events', true),
            set_config('tideway.agency', '', true), set_config('tideway.login_id', '', true);
    case app.partition_kind(p)
        when 'agency' then
            perform set_config('tideway.agency', substr(p, 8), true);
        when 'user' then
            perform set_config('tideway.user_id', substr(p, 6), true);
        when 'all-users' then
            perform set_config('tideway.user_id', nobody, true);
        when 'conversation' then
            select m.user_id::text into reader from app.conversation_members m
             where m.conversation_id = substr(p, 14) and m.active order by m.user_id limit 1;
            perform set_config('tideway.user_id', coalesce(reader, ''), true);
        when 'team' then
            select t.agency into reader from app.teams t where t.id = substr(p, 6)::uuid;
            perform set_config('tideway.user_id', nobody, true), set_config('tideway.role', 'agencyAdmin', true),
                    set_config('tideway.agency', coalesce(reader, ''), true);
        else
            null;
    end case;
    return app.can_read(p);
end
$$;

-- The stream revocations past id `handled`, which the publisher has not closed yet: their
-- last id and their channels, comma-separated (nulls when there are none). Read in the
-- snapshot of every event's read (app.start_event_read, app.event_clock), so that no event
-- reaches a stream of a login revoked before what the event announces. A SQL function that
-- is neither security definer nor strict and has no SET, so that PostgreSQL inlines it into
-- the calling statement (whose plan the calling PL/pgSQL function keeps per connection), as
-- if the query were written there. Only those security definer functions can read the table.
create or replace function app.pending_stream_revocations(handled bigint)
returns table (revoked_through bigint, revoked_channels text)
language sql stable as $$
    select max(r.id), string_agg(r.channels, ',' order by r.id) from app.stream_revocations r where r.id > handled
$$;

-- The first statement of the publisher's read of partition `p` (EventChanges.start), in
-- its snapshot: the claims of a reader of `p` (app.claim_reader_of), whether it may read
-- `p`, `p`'s clock and compaction horizon (as app.clocks gives them to that reader), and
-- the revocations past id `handled` (their last id and their channels, comma-separated),
-- which the publisher closes before it publishes what it read. One PL/pgSQL call, its
-- statements planned once per connection, where the claims, the revocations (a SQL
-- function planned at every call) and the pull's status statement were three statements
-- (docs/performance/round-04.md, "The event publisher's read, fourth round").
-- The publisher sends no BEGIN (EventChanges.session): its read is the implicit
-- transaction of one pipeline, made repeatable read by its connection's defaults. Anything
-- else would let the changes be read in a later snapshot than the clock and the
-- revocations, so it is refused here (the publisher then publishes a thin event).
create or replace function app.start_event_read(p text, handled bigint,
    out readable boolean, out seq bigint, out compacted_seq bigint, out revoked_through bigint, out revoked_channels text)
language plpgsql volatile security definer set search_path = app, pg_temp as $$
begin
    if current_setting('transaction_isolation') <> 'repeatable read' or current_setting('transaction_read_only') <> 'on' then
        raise exception 'app.start_event_read needs a repeatable read, read-only transaction' using errcode = '25000';
    end if;
    readable := app.claim_reader_of(p);
    if readable then
        select c.seq, c.compacted_seq into seq, compacted_seq from app.partition_clocks c where c.partition = p;
    end if;
    select v.revoked_through, v.revoked_channels into revoked_through, revoked_channels
      from app.pending_stream_revocations(handled) v;
end
$$;

-- A partition's clock alone, and the revocations past id `handled` as app.start_event_read
-- gives them (EventChanges.clock): the publisher's read for an event that stays thin because
-- no stream heard the partition's last one (EventPublisher.publishUnheard). The number only
-- decides whether the change was announced already and where the next carried event
-- starts; no document is read, so no reader's claims. The revocations are closed before the
-- event as after every read, so that every event, thin or not, handles those recorded.
-- PL/pgSQL, whose statements' plans the connection keeps: a SQL function that cannot be
-- inlined (security definer) parses and plans its body again at every call.
create or replace function app.event_clock(p text, handled bigint,
    out seq bigint, out revoked_through bigint, out revoked_channels text)
language plpgsql stable security definer set search_path = app, pg_temp as $$
begin
    select c.seq into seq from app.partition_clocks c where c.partition = p;
    select v.revoked_through, v.revoked_channels into revoked_through, revoked_channels
      from app.pending_stream_revocations(handled) v;
end
$$;

-- The revocations the publisher has not handled yet (it handled every id up to `handled`).
create or replace function app.stream_revocations_after(handled bigint) returns table (id bigint, channels text)
language sql stable security definer set search_path = app, pg_temp as $$
    select r.id, r.channels from app.stream_revocations r where r.id > handled order by r.id
$$;

-- Handled revocations are forgotten at the publisher's checkpoints.
create or replace function app.forget_stream_revocations(handled bigint) returns void
language sql security definer set search_path = app, pg_temp as $$
    delete from app.stream_revocations where id <= handled
$$;
