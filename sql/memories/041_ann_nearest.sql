-- privileges: tenant-helper
-- memex._ann_nearest: how many nearest neighbours memex._candidates_ann takes from the
-- vector index, which is also the depth memex.search asks the index to search
-- (hnsw.ef_search, memex._vector_index_settings). Without query terms: p_depth. With
-- them: p_depth times similarity's share of relevance (settings.hybrid_vector_weight,
-- default 0.5), never less than half (rounded up); the text matches bring the rest. At
-- the default weight, on both texts of bench/ann_default_bench.py, every memory of the
-- exact top 10 that only similarity found was among the 100 nearest of 200, and half as
-- many nearest kept recall@10 for fewer neighbour probes (each nearest brings its
-- neighbours in time) and a shallower HNSW search (bench/RESULTS.md, "Big tenants"). A
-- weight of 1 (similarity is all of relevance) keeps the full depth, as without terms.
-- No SET search_path on purpose: inlined into its callers' queries; memex._setting sets
-- its own.
create or replace function memex._ann_nearest(
    p_depth integer,
    p_terms text[]
)
returns integer
language sql stable parallel safe
as $$
    select case when coalesce(pg_catalog.cardinality(p_terms), 0) operator(pg_catalog.>) 0
                then pg_catalog.ceil(p_depth operator(pg_catalog.*) greatest(
                         0.5, memex._setting('hybrid_vector_weight', '0.5')::pg_catalog.float8
                     ))::pg_catalog.int4
                else p_depth end
$$;

comment on function memex._ann_nearest(integer, text[]) is
    'How many nearest neighbours an ANN search takes: with query terms, the depth times the vector weight (at least half).';
