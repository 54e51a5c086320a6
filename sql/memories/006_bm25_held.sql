-- privileges: tenant-helper
-- memex._held_bm25: a memory's BM25 score over at most eight query terms, as one
-- expression: the sum of memex._bm25 over the terms it holds, p_term1..8 one-lexeme
-- queries (null: no term), p_df1..8 their document frequencies, p_n and p_avgdl the
-- tenant's size and mean length. memex._candidates_ann scores the thousands of memories it
-- reads for their text with it when a query holds at most eight terms some memory holds
-- (questions rarely hold more); instead of a subquery per memory (unnest the memory's
-- query terms, join their frequencies, sum), whose function scan, hash join and aggregate
-- took a fifth of a request at 200,000 memories (bench/RESULTS.md, "Big tenants: BM25 in
-- one expression"). Scalars, not arrays: subscripting took ~5 % of a request.
--
-- The formula is memex._bm25's (k1 1.2, b 0.5) written out, one function to inline
-- instead of seventeen (this path is planned per request; each call site of this function
-- already adds ~0.25 ms of planning), with tf once: tf (k1 + 1) / (tf + k1 x) =
-- (k1 + 1) / (1 + k1 x / tf).
-- tf is read from ts_rank of the one-lexeme query with every weight 1, which is
-- sum(1/i^2, i = 1..tf) / (pi^2/6) (tsrank.c, calc_rank_or): pi^2/6 - sum(1/i^2, i = 1..tf)
-- lies between 1/(tf + 1) and 1/tf, so tf = round(1 / (pi^2/6 (1 - rank)) - 1/2); 0 (the
-- term is absent) gives no weight. tsvector keeps at most 256 positions of a lexeme, as
-- cardinality(positions) counts them; a lexeme without positions counts once.
-- tests/test_held_bm25.py checks it against memex._bm25 over unnest, tf 1 to 256.
-- A term not given (null) is skipped by a case, not carried through the formula as nulls:
-- every operator of its block ran for each memory anyway (four unused blocks of eight for
-- a query of four terms): a few per cent of a 200,000-memory tenant's default request
-- (backend CPU, bench/RESULTS.md "Issue 39 item 0 (session 9)"). Same sum: an unused
-- block adds 0.
-- No SET search_path here on purpose (it would stop inlining; this runs per memory).
create or replace function memex._held_bm25(
    p_tsv tsvector,
    p_dl double precision,
    p_n double precision,
    p_avgdl double precision,
    p_term1 tsquery,
    p_df1 double precision,
    p_term2 tsquery,
    p_df2 double precision,
    p_term3 tsquery,
    p_df3 double precision,
    p_term4 tsquery,
    p_df4 double precision,
    p_term5 tsquery,
    p_df5 double precision,
    p_term6 tsquery,
    p_df6 double precision,
    p_term7 tsquery,
    p_df7 double precision,
    p_term8 tsquery,
    p_df8 double precision
)
returns double precision
language sql immutable parallel safe
as $$
    select case when p_term1 is null then 0 else coalesce(pg_catalog.ln(1.0 + (greatest(p_n, p_df1) - p_df1 + 0.5) / (p_df1 + 0.5)) * (1.2 + 1.0)
                       / (1.0 + 1.2 * (1.0 - 0.5 + 0.5 * p_dl / greatest(p_avgdl, 1.0))
                                / nullif(pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - pg_catalog.ts_rank(
                                      '{1,1,1,1}'::real[], p_tsv, p_term1)::double precision)) - 0.5), 0)),
                       0) end
         + case when p_term2 is null then 0 else coalesce(pg_catalog.ln(1.0 + (greatest(p_n, p_df2) - p_df2 + 0.5) / (p_df2 + 0.5)) * (1.2 + 1.0)
                       / (1.0 + 1.2 * (1.0 - 0.5 + 0.5 * p_dl / greatest(p_avgdl, 1.0))
                                / nullif(pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - pg_catalog.ts_rank(
                                      '{1,1,1,1}'::real[], p_tsv, p_term2)::double precision)) - 0.5), 0)),
                       0) end
         + case when p_term3 is null then 0 else coalesce(pg_catalog.ln(1.0 + (greatest(p_n, p_df3) - p_df3 + 0.5) / (p_df3 + 0.5)) * (1.2 + 1.0)
                       / (1.0 + 1.2 * (1.0 - 0.5 + 0.5 * p_dl / greatest(p_avgdl, 1.0))
                                / nullif(pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - pg_catalog.ts_rank(
                                      '{1,1,1,1}'::real[], p_tsv, p_term3)::double precision)) - 0.5), 0)),
                       0) end
         + case when p_term4 is null then 0 else coalesce(pg_catalog.ln(1.0 + (greatest(p_n, p_df4) - p_df4 + 0.5) / (p_df4 + 0.5)) * (1.2 + 1.0)
                       / (1.0 + 1.2 * (1.0 - 0.5 + 0.5 * p_dl / greatest(p_avgdl, 1.0))
                                / nullif(pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - pg_catalog.ts_rank(
                                      '{1,1,1,1}'::real[], p_tsv, p_term4)::double precision)) - 0.5), 0)),
                       0) end
         + case when p_term5 is null then 0 else coalesce(pg_catalog.ln(1.0 + (greatest(p_n, p_df5) - p_df5 + 0.5) / (p_df5 + 0.5)) * (1.2 + 1.0)
                       / (1.0 + 1.2 * (1.0 - 0.5 + 0.5 * p_dl / greatest(p_avgdl, 1.0))
                                / nullif(pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - pg_catalog.ts_rank(
                                      '{1,1,1,1}'::real[], p_tsv, p_term5)::double precision)) - 0.5), 0)),
                       0) end
         + case when p_term6 is null then 0 else coalesce(pg_catalog.ln(1.0 + (greatest(p_n, p_df6) - p_df6 + 0.5) / (p_df6 + 0.5)) * (1.2 + 1.0)
                       / (1.0 + 1.2 * (1.0 - 0.5 + 0.5 * p_dl / greatest(p_avgdl, 1.0))
                                / nullif(pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - pg_catalog.ts_rank(
                                      '{1,1,1,1}'::real[], p_tsv, p_term6)::double precision)) - 0.5), 0)),
                       0) end
         + case when p_term7 is null then 0 else coalesce(pg_catalog.ln(1.0 + (greatest(p_n, p_df7) - p_df7 + 0.5) / (p_df7 + 0.5)) * (1.2 + 1.0)
                       / (1.0 + 1.2 * (1.0 - 0.5 + 0.5 * p_dl / greatest(p_avgdl, 1.0))
                                / nullif(pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - pg_catalog.ts_rank(
                                      '{1,1,1,1}'::real[], p_tsv, p_term7)::double precision)) - 0.5), 0)),
                       0) end
         + case when p_term8 is null then 0 else coalesce(pg_catalog.ln(1.0 + (greatest(p_n, p_df8) - p_df8 + 0.5) / (p_df8 + 0.5)) * (1.2 + 1.0)
                       / (1.0 + 1.2 * (1.0 - 0.5 + 0.5 * p_dl / greatest(p_avgdl, 1.0))
                                / nullif(pg_catalog.round(1.0 / (1.6449340668482264 * (1.0 - pg_catalog.ts_rank(
                                      '{1,1,1,1}'::real[], p_tsv, p_term8)::double precision)) - 0.5), 0)),
                       0) end
$$;

comment on function memex._held_bm25(tsvector, double precision, double precision,
                                     double precision, tsquery, double precision, tsquery,
                                     double precision, tsquery, double precision, tsquery,
                                     double precision, tsquery, double precision, tsquery,
                                     double precision, tsquery, double precision, tsquery,
                                     double precision) is
    'BM25 of a memory over at most eight query terms, one expression (memex._bm25 written out).';
