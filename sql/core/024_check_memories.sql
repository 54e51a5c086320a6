-- privileges: tenant-helper
-- memex._check_memories: validate the parallel arrays of a batch (memex.store_many,
-- memex.import_memories): at least one item, every array of the same length (optional
-- arrays may be null), and each item as memex._check_memory does, naming the item
-- ("memories[3].content", SQLSTATE MX422).
create or replace function memex._check_memories(
    p_agent_ids text[],
    p_user_ids text[],
    p_contents text[],
    p_embeddings vector[],
    p_embedding_model text,
    p_optional integer[],  -- cardinalities of the optional arrays (null: array absent)
    p_importances double precision[],
    p_metadata jsonb[]
)
returns integer
language plpgsql stable set search_path = pg_catalog, public, pg_temp
as $$
declare
    v_n integer := coalesce(cardinality(p_contents), 0);
    v_i integer;
begin
    if v_n = 0 then
        perform memex._invalid('contents', 'must hold at least one memory');
    end if;
    if coalesce(cardinality(p_agent_ids), 0) <> v_n
       or coalesce(cardinality(p_user_ids), 0) <> v_n
       or coalesce(cardinality(p_embeddings), 0) <> v_n
       or exists (select 1 from unnest(p_optional) o where o <> v_n) then
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
    return v_n;
end
$$;

comment on function memex._check_memories(text[], text[], text[], vector[], text, integer[],
                                          double precision[], jsonb[]) is
    'Raise MX422 naming the first invalid item of a batch of memories; returns its size.';
