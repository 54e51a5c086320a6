-- memex._candidates_ann: candidates for a tenant too large for an exact scan: the union
-- of the p_depth nearest neighbours (HNSW index; memex.search turns on iterative scans so
-- the tenant filter does not starve the index), the p_depth most recent memories (so
-- alpha = 0 still sees what is newest) and the p_depth memories matching the most query
-- terms (GIN index). Each is scored like the exact path; BM25 document frequencies are
-- counted over the whole tenant through the GIN index.
create or replace function memex._candidates_ann(
    p_agent_id text,
    p_user_id text,
    p_query_embedding vector,
    p_terms text[],
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
    any_term as (
        select array_to_string(array(select quote_literal(t) from unnest(p_terms) t), ' | ')::tsquery
            as q
        where cardinality(p_terms) > 0
    ),
    ids as (
        (select l.id from live l
         where p_query_embedding is not null
         order by l.embedding <=> p_query_embedding limit p_depth)
        union
        (select l.id from live l order by l.created_at desc limit p_depth)
        union
        (select l.id from live l, any_term a
         where l.tsv @@ a.q
         order by ts_rank(l.tsv, a.q) desc limit p_depth)
    ),
    candidates as materialized (
        select m.id, m.importance::double precision as importance, m.created_at,
               1 - (m.embedding <=> p_query_embedding) as similarity, m.tsv
        from ids join memex.memories m on m.id = ids.id
    ),
    frequencies as (
        select t as lexeme,
               (select count(*) from live l where l.tsv @@ quote_literal(t)::tsquery)::double precision
                   as df
        from unnest(p_terms) t
    ),
    stats as (  -- the tenant's size from memex.tenants; counting 100k+ rows per query would not do
        select greatest(coalesce(max(t.memory_count), 1), 1)::double precision as n
        from memex.tenants t where t.agent_id = p_agent_id and t.user_id = p_user_id
    ),
    occurrences as (
        select c.id, t.lexeme, coalesce(cardinality(t.positions), 1) as tf, length(c.tsv) as dl,
               avg(length(c.tsv)) over () as avgdl
        from candidates c cross join lateral unnest(c.tsv) t
        where cardinality(p_terms) > 0 and t.lexeme = any (p_terms)
    ),
    bm25 as (
        select o.id, sum(memex._bm25(o.tf, o.dl, f.df, s.n, o.avgdl)) as score
        from occurrences o join frequencies f using (lexeme) cross join stats s
        group by o.id
    )
    select c.id, c.importance, c.created_at, c.similarity, b.score
    from candidates c left join bm25 b on b.id = c.id
$$;

comment on function memex._candidates_ann(text, text, vector, text[], memex.memory_type[],
                                          text, timestamptz, integer) is
    'Nearest, newest and best text-matching memories of a large tenant, scored (ANN search).';
