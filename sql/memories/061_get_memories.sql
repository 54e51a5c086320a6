-- privileges: tenant
-- memex.get_memories: many memories of one tenant by id in one statement (LangGraph's
-- store gets: issue 37), as memex.get_memory reads one (live, archived or superseded;
-- not expired), in the order of p_ids; an id that is not this tenant's is left out (no
-- error), an id given twice is answered once.
create or replace function memex.get_memories(
    p_agent_id text,
    p_user_id text,
    p_ids uuid[],
    p_now timestamptz default null
)
returns setof memex.memory_record
language plpgsql stable security definer set search_path = pg_catalog, pg_temp
as $$
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._authorize(p_agent_id, p_user_id, 'read');
    if coalesce(cardinality(p_ids), 0) > 1000 then
        perform memex._invalid('memory_ids', 'must hold at most 1000 ids');
    end if;
    return query
    select (memex._memory_record(m)).*
    from memex._live_memories(p_agent_id, p_user_id, null, null, coalesce(p_now, now()),
                              p_include_archived => true, p_include_superseded => true) m
    join (select distinct on (i.id) i.id, i.ord
          from unnest(p_ids) with ordinality as i(id, ord)
          order by i.id, i.ord) wanted on wanted.id = m.id
    order by wanted.ord;
end
$$;

comment on function memex.get_memories(text, text, uuid[], timestamptz) is
    'Many memories (live or archived) of tenant (agent_id, user_id) by id, in the order'
    ' given; ids not theirs are left out.';
