-- memex._candidates_ann: candidates for a tenant too large for an exact scan: the union
-- of the p_depth nearest neighbours (HNSW index; memex.search turns on iterative scans so
-- the tenant filter does not starve the index), the p_depth most recent memories (so
-- alpha = 0 still sees what is newest) and the p_depth best full-text matches.
create or replace function memex._candidates_ann(
    p_agent_id text,
    p_user_id text,
    p_query_embedding vector,
    p_tsquery tsquery,
    p_memory_types memex.memory_type[],
    p_embedding_model text,
    p_now timestamptz,
    p_depth integer
)
returns setof memex._candidate
language sql
stable
set search_path = pg_catalog, public, pg_temp
as $$
    with live as not materialized (
        select m.* from memex.memories m
        where m.agent_id = p_agent_id
          and m.user_id = p_user_id
          and m.archived_at is null
          and (m.expires_at is null or m.expires_at > p_now)
          and (p_memory_types is null or m.memory_type = any (p_memory_types))
          and (p_embedding_model is null or m.embedding_model = p_embedding_model)
    ),
    ids as (
        (select l.id from live l
         where p_query_embedding is not null
         order by l.embedding <=> p_query_embedding limit p_depth)
        union
        (select l.id from live l order by l.created_at desc limit p_depth)
        union
        (select l.id from live l
         where l.tsv @@ p_tsquery
         order by ts_rank_cd(l.tsv, p_tsquery, 1) desc limit p_depth)
    )
    select m.id, m.importance::double precision, m.created_at,
           1 - (m.embedding <=> p_query_embedding),
           case when m.tsv @@ p_tsquery then ts_rank_cd(m.tsv, p_tsquery, 1) end
    from ids join memex.memories m on m.id = ids.id
$$;

comment on function memex._candidates_ann(text, text, vector, tsquery, memex.memory_type[],
                                          text, timestamptz, integer) is
    'Nearest, newest and best text-matching memories of a large tenant (ANN search).';
