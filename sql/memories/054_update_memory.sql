-- privileges: tenant
-- memex.update_memory: change some fields of one live memory of a tenant and return it.
-- A null argument leaves its field unchanged; p_clear_expires_at = true removes the
-- expiry (p_expires_at must then be null). p_metadata replaces the whole object. A new
-- p_content needs its p_embedding and p_embedding_model (the caller embeds it); an
-- embedding alone re-embeds the same content (e.g. with another model). Every change sets
-- updated_at = now(); the result is checked like memex.store's input (MX422 naming the
-- field; a new expires_at must be in the future). Changing nothing is MX422 (field "patch"); an id that is not a live memory of
-- this tenant is MX404. Counts as a write against the agent's store rate limit.
-- Time (issue 36): p_supersedes (memex._supersede, as memex.store's), p_valid_from,
-- p_valid_to (p_clear_valid_to = true reopens it); a superseded memory may be updated
-- too (e.g. to correct when it held). Every change leaves a revision
-- (memex._memory_revision: one for the update, one per memory superseded, one for the
-- links). A content change keeps the caller's new embedding, as before.
create or replace function memex.update_memory(
    p_agent_id text,
    p_user_id text,
    p_id uuid,
    p_content text default null,
    p_embedding vector default null,
    p_embedding_model text default null,
    p_importance double precision default null,
    p_metadata jsonb default null,
    p_memory_type memex.memory_type default null,
    p_expires_at timestamptz default null,
    p_clear_expires_at boolean default false,
    p_now timestamptz default null,
    p_supersedes uuid[] default null,
    p_valid_from timestamptz default null,
    p_valid_to timestamptz default null,
    p_clear_valid_to boolean default false
)
returns memex.memory_record
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_row    memex.memories;
    v_result memex.memory_record;
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._authorize(p_agent_id, p_user_id, 'write');
    if p_content is null and p_embedding is null and p_importance is null
       and p_metadata is null and p_memory_type is null and p_expires_at is null
       and not coalesce(p_clear_expires_at, false) and p_supersedes is null
       and p_valid_from is null and p_valid_to is null
       and not coalesce(p_clear_valid_to, false) then
        perform memex._invalid('patch', 'must change at least one field');
    end if;
    if p_content is not null and p_embedding is null then
        perform memex._invalid('embedding', 'is required when content changes');
    end if;
    if p_embedding is not null and coalesce(p_embedding_model, '') = '' then
        perform memex._invalid('embedding_model', 'is required with an embedding');
    end if;
    if p_expires_at is not null and coalesce(p_clear_expires_at, false) then
        perform memex._invalid('expires_at', 'cannot be set and cleared at once');
    end if;
    if p_expires_at <= coalesce(p_now, now()) then  -- as memex.store: never found again
        perform memex._invalid('expires_at', 'must be in the future');
    end if;

    if p_valid_to is not null and coalesce(p_clear_valid_to, false) then
        perform memex._invalid('valid_to', 'cannot be set and cleared at once');
    end if;

    select m.* into v_row
    from memex._live_memories(p_agent_id, p_user_id, null, null, coalesce(p_now, now()),
                              p_include_superseded => true) m
    where m.id = p_id
    for update;
    if v_row.id is null then
        raise exception 'memory % not found', p_id using errcode = 'MX404';
    end if;
    if v_row.path is not null and (p_content is not null or p_embedding is not null) then
        -- a file keeps a revision of every change of its content: memex.write_file does it
        -- (MX409: a valid request the memory's state refuses)
        raise exception using
            errcode = 'MX409',
            message = 'this memory is a file: change its content with memory_write or'
                      ' memory_patch (by its path)';
    end if;

    perform memex._check_memory(p_agent_id, p_user_id, coalesce(p_content, v_row.content),
                                coalesce(p_embedding, v_row.embedding::public.vector),
                                coalesce(p_embedding_model, v_row.embedding_model),
                                coalesce(p_importance, v_row.importance),
                                coalesce(p_metadata, v_row.metadata));
    if (case when coalesce(p_clear_valid_to, false) then null
             else coalesce(p_valid_to, v_row.valid_to) end)
       < coalesce(p_valid_from, v_row.valid_from, v_row.created_at) then
        perform memex._invalid('valid_to', 'must not be before valid_from');
    end if;
    perform memex._enforce_rate_limit('store', p_agent_id);

    update memex.memories m
    set content = coalesce(p_content, m.content),
        embedding = coalesce(p_embedding, m.embedding),
        embedding_model = case when p_embedding is null then m.embedding_model
                               else p_embedding_model end,
        importance = coalesce(p_importance, m.importance),
        metadata = coalesce(p_metadata, m.metadata),
        memory_type = coalesce(p_memory_type, m.memory_type),
        expires_at = case when coalesce(p_clear_expires_at, false) then null
                          else coalesce(p_expires_at, m.expires_at) end,
        valid_from = coalesce(p_valid_from, m.valid_from),
        valid_to = case when coalesce(p_clear_valid_to, false) then null
                        else coalesce(p_valid_to, m.valid_to) end,
        updated_at = now(),
        actor = memex._actor()
    where m.id = v_row.id
    returning (memex._memory_record(m)).* into v_result;
    if p_supersedes is not null then
        perform memex._supersede(p_agent_id, p_user_id, v_row.id, p_supersedes);
        select (memex._memory_record(m)).* into v_result
        from memex.memories m where m.id = v_row.id;
    end if;
    return v_result;
end
$$;

comment on function memex.update_memory(text, text, uuid, text, vector, text, double precision,
                                        jsonb, memex.memory_type, timestamptz, boolean,
                                        timestamptz, uuid[], timestamptz, timestamptz,
                                        boolean) is
    'Change the given fields of one live memory of a tenant (null: unchanged); returns it.';
