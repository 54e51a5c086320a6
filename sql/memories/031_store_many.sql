-- privileges: tenant
-- memex.store_many: batch form of memex.store for imports. Parallel arrays, one element
-- per memory (optional arrays may be null for all-defaults). Validates every item first,
-- inserts them in one statement, and returns the stored memories in input order. An
-- expires_at in the past is MX422 (memories[i].expires_at), as in memex.store.
-- Each memory counts one item against the store rate limit (a batch of N costs N).
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
    v_past bigint;
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
    return query
    select * from memex.import_memories(
        null, p_agent_ids, p_user_ids, p_contents, p_embeddings, p_embedding_model,
        p_memory_types, p_importances, p_metadata, p_created_at, null, p_expires_at);
end
$$;

comment on function memex.store_many(text[], text[], text[], vector[], text,
                                     memex.memory_type[], double precision[], jsonb[],
                                     timestamptz[], timestamptz[]) is
    'Store many memories in one statement; returns them in input order.';
