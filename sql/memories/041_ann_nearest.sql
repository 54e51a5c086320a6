-- privileges: tenant-helper
-- memex._ann_nearest: how many nearest neighbours memex._candidates_ann takes from the
-- vector index, which is also the depth memex.search asks the index to search
-- (hnsw.ef_search, memex._vector_index_settings): p_depth, or half of it (rounded up) when
-- the request has query terms. Similarity is then half of relevance and the text matches
-- bring the rest: on both texts of bench/ann_default_bench.py, every memory of the exact
-- top 10 that only similarity found was among the 100 nearest of 200, and half as many
-- nearest kept recall@10 for fewer neighbour probes (each nearest brings its neighbours in
-- time) and a shallower HNSW search (bench/RESULTS.md, "Big tenants").
-- No SET search_path on purpose: inlined into its callers' queries, it folds to a
-- constant when they are planned.
create or replace function memex._ann_nearest(
    p_depth integer,
    p_terms text[]
)
returns integer
language sql
immutable
parallel safe
as $$
    select case when coalesce(pg_catalog.cardinality(p_terms), 0) operator(pg_catalog.>) 0
                then (p_depth operator(pg_catalog.+) 1) operator(pg_catalog./) 2
                else p_depth end
$$;

comment on function memex._ann_nearest(integer, text[]) is
    'How many nearest neighbours an ANN search takes: half the depth with query terms.';
