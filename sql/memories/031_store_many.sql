-- privileges: tenant
-- memex.store_many: batch form of memex.store for imports. Parallel arrays, one element
-- per memory (optional arrays may be null for all-defaults). Validates every item first,
-- inserts them in one statement, and returns the stored memories in input order. An
-- expires_at in the past is MX422 (memories[i].expires_at), as in memex.store.
-- Each memory counts one item against the store rate limit (a batch of N costs N).
-- p_ids (null, or a null item: a new id) makes a retried batch store once, as memex.store's
-- p_id: an item whose id exists already with the same memory (tenant, content, type,
-- importance, metadata) is answered with it; one whose id exists with another memory is
-- MX409 (memories[i].id) and nothing of the batch is stored.
create or replace function memex.store_many(
    p_agent_ids text[],
    p_user_ids text[],
    p_contents text[],
    p_embeddings vector[],
    p_embedding_model text,
    p_memory_types memex.memory_type[] default null,
    p_importances double precision[] default null,
    p_metadata jsonb[] default null,
    p_expires_at timestamptz[] default null,
    p_created_at timestamptz[] default null,
    p_ids uuid[] default null
)
returns setof memex.memory_record
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_past bigint;
    v_clash bigint;
    v_ids uuid[];
begin
    -- an expiry must be in the future, as memex.store says (an import may restore a past one)
    select min(e.ord) into v_past
    from unnest(p_expires_at) with ordinality as e(at, ord)
    where e.at <= now();
    if v_past is not null then
        perform memex._invalid(format('memories[%s].expires_at', v_past - 1),
                               'must be in the future');
    end if;
    -- memex.import_memories with new ids and updated_at = now(): one insert path, one
    -- validation (memex._check_memories), the same rate-limit hits.
    if p_ids is null then
        return query
        select * from memex.import_memories(
            null, p_agent_ids, p_user_ids, p_contents, p_embeddings, p_embedding_model,
            p_memory_types, p_importances, p_metadata, p_created_at, null, p_expires_at);
        return;
    end if;
    -- the items without an id get a new one here, so that each is found below
    select array_agg(coalesce(i.id, gen_random_uuid()) order by i.ord) into v_ids
    from unnest(p_ids) with ordinality as i(id, ord);
    -- an id that exists is skipped here (memex.import_memories), then checked below
    perform from memex.import_memories(
        v_ids, p_agent_ids, p_user_ids, p_contents, p_embeddings, p_embedding_model,
        p_memory_types, p_importances, p_metadata, p_created_at, null, p_expires_at);
    select min(i.ord) into v_clash
    from unnest(v_ids, p_agent_ids, p_user_ids, p_contents)
         with ordinality as i(id, agent_id, user_id, content, ord)
    where not exists (
        select from memex.memories m
        where m.id = i.id
          and m.agent_id = i.agent_id
          and m.user_id = i.user_id
          and m.content = i.content
          and m.memory_type = coalesce(p_memory_types[i.ord], 'episodic')
          and m.importance = coalesce(p_importances[i.ord], 1.0)
          and m.metadata = coalesce(p_metadata[i.ord], '{}'));
    if v_clash is not null then
        raise exception using
            errcode = 'MX409',
            message = format('memories[%s].id: memory %s exists already with other content',
                             v_clash - 1, v_ids[v_clash]);
    end if;
    return query
    select (memex._memory_record(m)).*
    from unnest(v_ids) with ordinality as i(id, ord)
    join memex.memories m on m.id = i.id
    order by i.ord;
end
$$;

comment on function memex.store_many(text[], text[], text[], vector[], text,
                                     memex.memory_type[], double precision[], jsonb[],
                                     timestamptz[], timestamptz[], uuid[]) is
    'Store many memories in one statement; returns them in input order (with p_ids, a'
    ' repeat of the same memories returns them, another memory with one of the ids is MX409).';
