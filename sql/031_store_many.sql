-- memex.store_many: batch form of memex.store for imports. Parallel arrays, one element
-- per memory (optional arrays may be null for all-defaults). Validates every item first,
-- inserts them in one statement, and returns the stored memories in input order.
-- Each distinct agent in the batch counts one hit against its store rate limit.
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
    p_created_at timestamptz[] default null
)
returns setof memex.memory_record
language plpgsql
volatile
set search_path = pg_catalog, public, pg_temp
as $$
declare
    v_n     integer := coalesce(cardinality(p_contents), 0);
    v_agent text;
    v_user  text;
    v_i     integer;
begin
    if v_n = 0 then
        perform memex._invalid('contents', 'must hold at least one memory');
    end if;
    if coalesce(cardinality(p_agent_ids), 0) <> v_n
       or coalesce(cardinality(p_user_ids), 0) <> v_n
       or coalesce(cardinality(p_embeddings), 0) <> v_n
       or cardinality(p_memory_types) <> v_n
       or cardinality(p_importances) <> v_n
       or cardinality(p_metadata) <> v_n
       or cardinality(p_expires_at) <> v_n
       or cardinality(p_created_at) <> v_n then
        perform memex._invalid('contents', 'all arrays must have the same length');
    end if;

    for v_i in 1 .. v_n loop
        begin
            perform memex._check_memory(p_agent_ids[v_i], p_user_ids[v_i], p_contents[v_i],
                                        p_embeddings[v_i], p_embedding_model,
                                        coalesce(p_importances[v_i], 1.0),
                                        p_metadata[v_i]);
        exception when sqlstate 'MX422' then
            -- Name the item: "memories[3].content".
            raise exception 'memories[%].%', v_i - 1, sqlerrm
                using errcode = 'MX422',
                      column = format('memories[%s].%s', v_i - 1,
                                      split_part(sqlerrm, ':', 1));
        end;
    end loop;

    for v_agent, v_user in select distinct a, u from unnest(p_agent_ids, p_user_ids) t(a, u)
                          order by 1, 2 loop
        perform memex._authorize(v_agent, v_user, 'write');
    end loop;
    for v_agent in select distinct a from unnest(p_agent_ids) a order by 1 loop
        perform memex._enforce_rate_limit('store', v_agent);
    end loop;

    return query
    with items as (
        select gen_random_uuid() as id, i.*
        from unnest(p_agent_ids, p_user_ids, p_contents, p_embeddings)
             with ordinality as i(agent_id, user_id, content, embedding, ord)
    ),
    inserted as (
        insert into memex.memories as m
            (id, agent_id, user_id, memory_type, content, embedding, embedding_model,
             importance, metadata, expires_at, created_at, updated_at)
        select it.id, it.agent_id, it.user_id,
               coalesce(p_memory_types[it.ord], 'episodic'), it.content, it.embedding,
               p_embedding_model, coalesce(p_importances[it.ord], 1.0),
               coalesce(p_metadata[it.ord], '{}'), p_expires_at[it.ord],
               coalesce(p_created_at[it.ord], now()), now()
        from items it
        returning m.id, memex._memory_record(m) as record
    )
    select (ins.record).*
    from inserted ins join items it on it.id = ins.id
    order by it.ord;
end
$$;

comment on function memex.store_many(text[], text[], text[], vector[], text,
                                     memex.memory_type[], double precision[], jsonb[],
                                     timestamptz[], timestamptz[]) is
    'Store many memories in one statement; returns them in input order.';
