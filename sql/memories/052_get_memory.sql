-- privileges: tenant
-- memex.get_memory: one memory of a tenant by id: a live one, or one consolidation
-- archived (archived_at and superseded_by, its summary, say so). Raises SQLSTATE MX404
-- when the id is not this tenant's (another tenant's id, an expired memory and a missing
-- id all look the same). A memory superseded by a newer one (issue 36) is found too
-- (superseded_by names its successor). p_as_of (issue 36) reads the memory as it was then:
-- the revision current at p_as_of (memex.memory_revisions) for its content, type,
-- importance, metadata, expiry and lineage, updated_at = that revision's time; MX404 if
-- it did not exist yet (whatever has expired since is still read as it was).
create or replace function memex.get_memory(
    p_agent_id text,
    p_user_id text,
    p_id uuid,
    p_now timestamptz default null,
    p_as_of timestamptz default null
)
returns memex.memory_record
language plpgsql stable security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_result memex.memory_record;
    v_old    memex.memory_revisions;
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._authorize(p_agent_id, p_user_id, 'read');
    if p_as_of is not null then
        -- the revision current then: what the memory said, and its lineage, at p_as_of
        select (memex._memory_record(m)).* into v_result
        from memex.memories m
        where m.id = p_id and m.agent_id = p_agent_id and m.user_id = p_user_id;
        if v_result.id is null then
            raise exception 'memory % not found', p_id using errcode = 'MX404';
        end if;
        v_old := memex._memory_revision_row(p_agent_id, p_user_id, p_id, null, p_as_of);
        v_result.memory_type := v_old.memory_type;
        v_result.content := v_old.content;
        v_result.importance := v_old.importance;
        v_result.metadata := v_old.metadata;
        v_result.updated_at := v_old.at;
        v_result.expires_at := v_old.expires_at;
        v_result.superseded_by := v_old.superseded_by;
        v_result.archived_at := v_old.archived_at;
        return v_result;
    end if;
    select (memex._memory_record(m)).* into v_result
    from memex._live_memories(p_agent_id, p_user_id, null, null, coalesce(p_now, now()),
                              p_include_archived => true, p_include_superseded => true) m
    where m.id = p_id;
    if v_result.id is null then
        raise exception 'memory % not found', p_id using errcode = 'MX404';
    end if;
    return v_result;
end
$$;

comment on function memex.get_memory(text, text, uuid, timestamptz, timestamptz) is
    'One memory (live or archived) of tenant (agent_id, user_id) by id; MX404 if not theirs.';
