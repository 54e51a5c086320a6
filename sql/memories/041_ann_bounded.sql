-- privileges: tenant-helper
-- memex._ann_bounded: whether memex._candidates_ann bounds the score of the newest
-- memories instead of scoring them all: a vector-only ranking (p_top_k given, a query
-- embedding, no query terms) without memory type or metadata filters, where a memory's
-- score is memex._score(similarity, recency, importance, alpha) and its similarity is at
-- most the least among the nearest neighbours.
-- No SET search_path on purpose: a SET clause stops the planner from inlining the
-- function. Inlined into memex._candidates_ann's cached generic plan, it is a One-Time
-- Filter of the branches it turns on or off (evaluated once a call, not per row).
create or replace function memex._ann_bounded(
    p_top_k integer,
    p_query_embedding public.halfvec,
    p_terms text[],
    p_memory_types memex.memory_type[],
    p_metadata jsonb
)
returns boolean
language sql immutable parallel safe
as $$
    select p_top_k is not null and p_query_embedding is not null
           and coalesce(pg_catalog.cardinality(p_terms), 0) operator(pg_catalog.=) 0
           and p_memory_types is null and p_metadata is null
$$;

comment on function memex._ann_bounded(integer, public.halfvec, text[], memex.memory_type[], jsonb) is
    'Whether memex._candidates_ann bounds the newest memories (vector-only, unfiltered).';
