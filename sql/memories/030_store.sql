-- privileges: tenant
-- memex.store: insert one memory for a tenant and return it.
-- p_embedding is the vector of p_content made by p_embedding_model (384 dimensions for
-- the default column); p_created_at back-dates imported memories (default now()).
-- p_expires_at, when given, must be in the future (MX422): a memory already expired would
-- be invisible from the start. (memex.import_memories restores past expiries as exported.)
-- p_id, when given, is the new memory's id (a client's, so that a retried store stores
-- once): if a memory with that id exists already, a repeat of the same memory (tenant,
-- content, type, importance, metadata) returns it unchanged; anything else is MX409,
-- an id another tenant holds included (ids are one namespace): the same error as for the
-- caller's own id, naming nothing of the other memory (docs/sql-api.md).
-- A memory stored by memory_memorize's fallback (the caller delegated to memorize-agent:
-- memex._delegate) gets its access-log entry (operation memorize, target the memory's id)
-- in the same statement, so in the same transaction.
-- Time (issue 36): p_supersedes names the memories this one replaces (a newer version of
-- the same fact: memex._supersede links them both ways, closes their validity and takes
-- them out of the default search; unknown or other tenants' ids MX404, a cycle MX422);
-- p_valid_from / p_valid_to say when the fact held (null valid_from: from created_at;
-- null valid_to: open-ended; valid_to before the start is MX422). The insert leaves the
-- memory's revision 1 (memex._memory_revisions_stored). A retried store (p_id) supersedes nothing
-- more.
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
    p_created_at timestamptz default null,
    p_id uuid default null,
    p_supersedes uuid[] default null,
    p_valid_from timestamptz default null,
    p_valid_to timestamptz default null
)
returns memex.memory_record
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_result     memex.memory_record;
    -- listed on the new memory as it is inserted (memex._supersede checks and links them)
    v_supersedes uuid[];
begin
    if p_supersedes is not null then
        v_supersedes := (select array_agg(distinct s.id order by s.id)
                         from unnest(p_supersedes) s(id) where s.id is not null);
    end if;
    perform memex._check_memory(p_agent_id, p_user_id, p_content, p_embedding,
                                p_embedding_model, p_importance, p_metadata);
    if p_expires_at <= now() then  -- it would never be found (memex.import_memories may)
        perform memex._invalid('expires_at', 'must be in the future');
    end if;
    if p_valid_to < coalesce(p_valid_from, p_created_at, now()) then
        perform memex._invalid('valid_to', 'must not be before valid_from');
    end if;
    perform memex._authorize(p_agent_id, p_user_id, 'write');
    perform memex._enforce_rate_limit('store', p_agent_id);

    if p_id is null then
        insert into memex.memories as m
            (agent_id, user_id, memory_type, content, embedding, embedding_model, importance,
             metadata, expires_at, created_at, updated_at, valid_from, valid_to,
             supersedes)
        values
            (p_agent_id, p_user_id, coalesce(p_memory_type, 'episodic'), p_content,
             p_embedding, p_embedding_model, p_importance, coalesce(p_metadata, '{}'),
             p_expires_at, coalesce(p_created_at, now()), now(), p_valid_from, p_valid_to,
             v_supersedes)
        returning (memex._memory_record(m)).* into v_result;
        if cardinality(p_supersedes) > 0 then  -- listed as inserted: no second write
            perform memex._supersede(p_agent_id, p_user_id, v_result.id, p_supersedes,
                                     coalesce(v_result.valid_from, v_result.created_at));
        end if;
        if memex._actor() = 'memorize-agent' then
            perform memex._log_access(p_agent_id, p_user_id, 'memorize', v_result.id::text);
        end if;
        return v_result;
    end if;

    insert into memex.memories as m
        (id, agent_id, user_id, memory_type, content, embedding, embedding_model, importance,
         metadata, expires_at, created_at, updated_at, valid_from, valid_to,
             supersedes)
    values
        (p_id, p_agent_id, p_user_id, coalesce(p_memory_type, 'episodic'), p_content,
         p_embedding, p_embedding_model, p_importance, coalesce(p_metadata, '{}'),
         p_expires_at, coalesce(p_created_at, now()), now(), p_valid_from, p_valid_to,
         v_supersedes)
    on conflict (id) do nothing
    returning (memex._memory_record(m)).* into v_result;
    if found then
        if cardinality(p_supersedes) > 0 then
            perform memex._supersede(p_agent_id, p_user_id, v_result.id, p_supersedes,
                                     coalesce(v_result.valid_from, v_result.created_at));
        end if;
        return v_result;
    end if;
    -- the id exists: the same memory stored before (a retry) is answered with it
    select (memex._memory_record(m)).* into v_result
    from memex.memories m
    where m.id = p_id
      and m.agent_id = p_agent_id
      and m.user_id = p_user_id
      and m.content = p_content
      and m.memory_type = coalesce(p_memory_type, 'episodic')
      and m.importance = p_importance
      and m.metadata = coalesce(p_metadata, '{}');
    if v_result.id is null then
        raise exception using
            errcode = 'MX409',
            message = format('memory %s exists already with other content', p_id);
    end if;
    return v_result;
end
$$;

comment on function memex.store(text, text, text, vector, text, memex.memory_type,
                                double precision, jsonb, timestamptz, timestamptz, uuid,
                                uuid[], timestamptz, timestamptz) is
    'Store one memory for tenant (agent_id, user_id); returns memex.memory_record; with'
    ' p_id, a repeat of the same memory returns it (a retry), another one is MX409.';
