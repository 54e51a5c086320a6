-- privileges: tenant-helper
-- memex._bm25: the BM25 weight of one query term in one memory (k1 = 1.2, b = 0.5; a lower
-- b than the usual 0.75 because memories are short and similar in length).
--   idf = ln(1 + (n - df + 0.5) / (df + 0.5)),  weight = idf * tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))
-- p_tf: occurrences of the term in the memory; p_dl: lexemes in the memory; p_df: memories
-- of the tenant holding the term; p_n: memories of the tenant; p_avgdl: mean of dl.
-- No SET search_path on purpose (it would stop inlining; this runs per term and memory).
create or replace function memex._bm25(
    p_tf double precision,
    p_dl double precision,
    p_df double precision,
    p_n double precision,
    p_avgdl double precision
)
returns double precision
language sql immutable parallel safe
as $$
    select pg_catalog.ln(1.0 + (greatest(p_n, p_df) - p_df + 0.5) / (p_df + 0.5))
           * p_tf * (1.2 + 1.0)
           / (p_tf + 1.2 * (1.0 - 0.5 + 0.5 * p_dl / greatest(p_avgdl, 1.0)))
$$;

comment on function memex._bm25(double precision, double precision, double precision,
                                double precision, double precision) is
    'BM25 (k1 1.2, b 0.5) weight of one term in one memory.';
