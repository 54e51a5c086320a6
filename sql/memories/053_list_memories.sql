-- privileges: tenant
-- memex.list_memories: the live memories of a tenant, newest first (created_at desc, then
-- id desc), one page of at most p_limit (1 to 1000, default 50). Keyset paging: pass the
-- (created_at, id) of the last row of a page as (p_cursor_created_at, p_cursor_id) to get
-- the next one (both or neither). Filters: one memory type, a created_at range
-- (p_created_after <= created_at < p_created_before) and metadata containment
-- (metadata @> p_metadata, a JSON object). p_include_archived lists the memories
-- consolidation archived as well, each with its summary (superseded_by), and the memories
-- a newer one superseded (issue 36: superseded_by, their successor; left out otherwise).
create or replace function memex.list_memories(
    p_agent_id text,
    p_user_id text,
    p_limit integer default 50,
    p_cursor_created_at timestamptz default null,
    p_cursor_id uuid default null,
    p_memory_type memex.memory_type default null,
    p_created_after timestamptz default null,
    p_created_before timestamptz default null,
    p_metadata jsonb default null,
    p_now timestamptz default null,
    p_include_archived boolean default false
)
returns setof memex.memory_record
language plpgsql stable security definer set search_path = pg_catalog, pg_temp
as $$
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._authorize(p_agent_id, p_user_id, 'read');
    if p_limit is null or p_limit not between 1 and 1000 then
        perform memex._invalid('limit', 'must be between 1 and 1000');
    end if;
    if (p_cursor_created_at is null) <> (p_cursor_id is null) then
        perform memex._invalid('cursor', 'needs both created_at and id of the last row');
    end if;
    perform memex._check_metadata(p_metadata);
    return query
    select (memex._memory_record(m)).*
    from memex._live_memories(p_agent_id, p_user_id,
                              case when p_memory_type is null then null
                                   else array[p_memory_type] end,
                              null, coalesce(p_now, now()), p_metadata,
                              p_include_archived,
                              p_include_superseded => p_include_archived) m
    -- Bounds on created_at alone, with no "is null or": a generic plan keeps them as the
    -- range of the tenant index scan, so a deep page does not scan the pages before it.
    where m.created_at <= coalesce(p_cursor_created_at, 'infinity')
      and m.created_at >= coalesce(p_created_after, '-infinity')
      and m.created_at < coalesce(p_created_before, 'infinity')
      and (p_cursor_id is null or (m.created_at, m.id) < (p_cursor_created_at, p_cursor_id))
    order by m.created_at desc, m.id desc
    limit p_limit;
end
$$;

comment on function memex.list_memories(text, text, integer, timestamptz, uuid,
                                         memex.memory_type, timestamptz, timestamptz, jsonb,
                                         timestamptz, boolean) is
    'A page of a tenant''s live memories, newest first, keyset-paged by (created_at, id).';
