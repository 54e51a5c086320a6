-- privileges: tenant
-- memex.export_history: one page of the history of an agent's user (or of all its users
-- when p_user_id is null) for an export, after its memories (memex.export_memories): the
-- file revisions (memex.file_revisions), then the access log (memex.access_log), then the
-- consolidation runs (memex.consolidation_runs), each in the order it was written: by
-- (user_id, id) for file revisions, the access log and memory revisions (their ids are
-- numbers per user, memex._history_id), by id for runs (numbers per agent). Each row is
-- (kind, id, record): kind 'file_revision', 'access', 'consolidation_run' or
-- 'memory_revision', the row's id in this database and the row as JSON without its id
-- (the keyset cursor: pass the last row's kind, its record's user_id and its id as
-- p_after_kind, p_after_user_id, p_after_id; p_after_user_id is needed after a file
-- revision, an access entry or a memory revision, and ignored after a run), which another
-- database gives anew; a run's restored_by is left out too
-- (memex.import_consolidation_runs links a restored run to its restore again by their
-- summary). p_limit: 1 to 1000 (default 500). Read access, as for the tenant's other reads.
-- p_include_memory_revisions (issue 36; memexdb's export passes true unless asked not
-- to, SQL callers get false by default) adds, last, the memories' revisions
-- (memex.memory_revisions, kind 'memory_revision'), which memex.import_memory_revisions
-- restores: a memory's history, and through its newest revision its validity and
-- supersession links. Only those of the memories memex.export_memories exports: an
-- expired memory's revisions are left out with it (an import would refuse them: no such
-- memory).
create or replace function memex.export_history(
    p_agent_id text,
    p_user_id text default null,
    p_after_kind text default null,
    p_after_user_id text default null,
    p_after_id bigint default null,
    p_limit integer default 500,
    p_include_memory_revisions boolean default false
)
returns table (kind text, id bigint, record jsonb)
language plpgsql stable security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_kinds constant text[] := array['file_revision', 'access', 'consolidation_run',
                                     'memory_revision'];
    v_after integer := coalesce(array_position(v_kinds, p_after_kind), 0);
    v_left  integer := p_limit;
    v_rows  integer;
begin
    perform memex._check_tenant(p_agent_id, coalesce(p_user_id, '-'));
    perform memex._authorize(p_agent_id, p_user_id, 'read');
    if p_limit is null or p_limit not between 1 and 1000 then
        perform memex._invalid('limit', 'must be between 1 and 1000');
    end if;
    if (p_after_kind is null) <> (p_after_id is null)
       or (p_after_kind is not null and v_after = 0)
       or (v_after in (1, 2, 4) and p_after_user_id is null) then
        perform memex._invalid('cursor', 'needs the kind, user and id of the last row');
    end if;
    -- one kind after the other, each by its primary key, until the page is full
    if v_after <= 1 then
        return query
        select 'file_revision', r.id, to_jsonb(r) - 'id'
        from memex.file_revisions r
        where r.agent_id = p_agent_id and (p_user_id is null or r.user_id = p_user_id)
          and (v_after < 1 or (r.user_id, r.id) > (p_after_user_id, p_after_id))
        order by r.user_id, r.id limit v_left;
        get diagnostics v_rows = row_count;
        v_left := v_left - v_rows;
    end if;
    if v_after <= 2 and v_left > 0 then
        return query
        select 'access', a.id, to_jsonb(a) - 'id'
        from memex.access_log a
        where a.agent_id = p_agent_id and (p_user_id is null or a.user_id = p_user_id)
          and (v_after < 2 or (a.user_id, a.id) > (p_after_user_id, p_after_id))
        order by a.user_id, a.id limit v_left;
        get diagnostics v_rows = row_count;
        v_left := v_left - v_rows;
    end if;
    if v_after <= 3 and v_left > 0 then
        return query
        select 'consolidation_run', c.id, to_jsonb(c) - 'id' - 'restored_by'
        from memex.consolidation_runs c
        where c.agent_id = p_agent_id and (p_user_id is null or c.user_id = p_user_id)
          and (v_after < 3 or c.id > p_after_id)
        order by c.id limit v_left;
        get diagnostics v_rows = row_count;
        v_left := v_left - v_rows;
    end if;
    if p_include_memory_revisions and v_left > 0 then
        return query
        select 'memory_revision', r.id, to_jsonb(r) - 'id'
        from memex.memory_revisions r
        where r.agent_id = p_agent_id and (p_user_id is null or r.user_id = p_user_id)
          and (v_after < 4 or (r.user_id, r.id) > (p_after_user_id, p_after_id))
          and not exists (select from memex.memories m
                          where m.id = r.memory_id and m.expires_at <= now())
        order by r.user_id, r.id limit v_left;
    end if;
end
$$;

comment on function memex.export_history(text, text, text, text, bigint, integer, boolean) is
    'A page of a tenant''s file revisions, access log, consolidation runs (and memory'
    ' revisions), for export.';
