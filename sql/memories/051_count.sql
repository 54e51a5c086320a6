-- privileges: tenant
-- memex.count: number of live memories of a tenant (memex._live_memories: unarchived,
-- not superseded, unexpired at p_now), optionally of one memory type and one embedding model (the
-- memories a search with that model can find), optionally only those whose metadata
-- contains p_metadata (a JSON object).
create or replace function memex.count(
    p_agent_id text,
    p_user_id text,
    p_memory_type memex.memory_type default null,
    p_embedding_model text default null,
    p_now timestamptz default null,
    p_metadata jsonb default null
)
returns bigint
language plpgsql stable security definer set search_path = pg_catalog, pg_temp
as $$
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._authorize(p_agent_id, p_user_id, 'read');
    perform memex._check_metadata(p_metadata);
    return (
        select count(*)
        from memex._live_memories(p_agent_id, p_user_id,
                                  case when p_memory_type is null then null
                                       else array[p_memory_type] end,
                                  p_embedding_model, coalesce(p_now, now()), p_metadata)
    );
end
$$;

comment on function memex.count(text, text, memex.memory_type, text, timestamptz, jsonb) is
    'Count live memories of tenant (agent_id, user_id), optionally of one type, model, metadata.';
