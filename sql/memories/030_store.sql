-- privileges: tenant
-- memex.store: insert one memory for a tenant and return it.
-- p_embedding is the vector of p_content made by p_embedding_model (384 dimensions for
-- the default column); p_created_at back-dates imported memories (default now()).
-- p_expires_at, when given, must be in the future (MX422): a memory already expired would
-- be invisible from the start. (memex.import_memories restores past expiries as exported.)
create or replace function memex.store(
    p_agent_id text,
    p_user_id text,
    p_content text,
    p_embedding vector,
    p_embedding_model text,
    p_memory_type memex.memory_type default 'episodic',
    p_importance double precision default 1.0,
    p_metadata jsonb default '{}',
    p_expires_at timestamptz default null,
    p_created_at timestamptz default null
)
returns memex.memory_record
language plpgsql
volatile
set search_path = pg_catalog, public, pg_temp
as $$
declare
    v_result memex.memory_record;
begin
    perform memex._check_memory(p_agent_id, p_user_id, p_content, p_embedding,
                                p_embedding_model, p_importance, p_metadata);
    if p_expires_at <= now() then  -- it would never be found (memex.import_memories may)
        perform memex._invalid('expires_at', 'must be in the future');
    end if;
    perform memex._authorize(p_agent_id, p_user_id, 'write');
    perform memex._enforce_rate_limit('store', p_agent_id);

    insert into memex.memories as m
        (agent_id, user_id, memory_type, content, embedding, embedding_model, importance,
         metadata, expires_at, created_at, updated_at)
    values
        (p_agent_id, p_user_id, coalesce(p_memory_type, 'episodic'), p_content, p_embedding,
         p_embedding_model, p_importance, coalesce(p_metadata, '{}'), p_expires_at,
         coalesce(p_created_at, now()), now())
    returning (memex._memory_record(m)).* into v_result;
    return v_result;
end
$$;

comment on function memex.store(text, text, text, vector, text, memex.memory_type,
                                double precision, jsonb, timestamptz, timestamptz) is
    'Store one memory for tenant (agent_id, user_id); returns memex.memory_record.';
