-- privileges: tenant
-- memex.get_memory: one memory of a tenant by id: a live one, or one consolidation
-- archived (archived_at and superseded_by, its summary, say so). Raises SQLSTATE MX404
-- when the id is not this tenant's (another tenant's id, an expired memory and a missing
-- id all look the same).
create or replace function memex.get_memory(
    p_agent_id text,
    p_user_id text,
    p_id uuid,
    p_now timestamptz default null
)
returns memex.memory_record
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_result memex.memory_record;
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._authorize(p_agent_id, p_user_id, 'read');
    select (memex._memory_record(m)).* into v_result
    from memex._live_memories(p_agent_id, p_user_id, null, null, coalesce(p_now, now()),
                              p_include_archived => true) m
    where m.id = p_id;
    if v_result.id is null then
        raise exception 'memory % not found', p_id using errcode = 'MX404';
    end if;
    return v_result;
end
$$;

comment on function memex.get_memory(text, text, uuid, timestamptz) is
    'One memory (live or archived) of tenant (agent_id, user_id) by id; MX404 if not theirs.';
