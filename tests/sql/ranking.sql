-- Ranking: memex.search scores on hand-made vectors, at a fixed time (p_now), so every
-- figure below is exact. Run as the operator (the role that migrated: it sees every
-- tenant). Vectors have 384 dimensions (memex.embedding_dims()): three given values,
-- then zeros (array[a, b, c]::real[] || array_fill(0::real, array[381])).
\set VERBOSITY terse
\set SHOW_CONTEXT never
select memex.embedding_dims();
-- three memories of one tenant, 0, 30 and 60 days before the reference time
select content, importance
from memex.store('ranking', 'u', 'tea every morning',
                 (array[1, 0, 0]::real[] || array_fill(0::real, array[381]))::public.vector,
                 'hand-made', p_created_at => '2026-01-31 00:00:00+00')
union all
select content, importance
from memex.store('ranking', 'u', 'coffee after lunch',
                 (array[0.6, 0.8, 0]::real[] || array_fill(0::real, array[381]))::public.vector,
                 'hand-made', p_created_at => '2026-01-01 00:00:00+00')
union all
select content, importance
from memex.store('ranking', 'u', 'green tea in winter',
                 (array[0.8, 0.6, 0]::real[] || array_fill(0::real, array[381]))::public.vector,
                 'hand-made', p_importance => 2, p_created_at => '2025-12-02 00:00:00+00');
-- memex's formula (alpha given): score = (0.7 * cosine + 0.3 * 2^(-age / 30 d)) * importance
select content, round(similarity::numeric, 6) as similarity,
       round(recency::numeric, 6) as recency, round(score::numeric, 6) as score
from memex.search('ranking', 'u',
                  (array[1, 0, 0]::real[] || array_fill(0::real, array[381]))::public.vector,
                  p_alpha => 0.7, p_now => '2026-01-31 00:00:00+00');
-- the default (alpha null): recency a bounded tiebreaker, half-life 90 days:
-- score = (relevance + 0.25 * recency * |relevance|) * importance
select content, round(relevance::numeric, 6) as relevance,
       round(recency::numeric, 6) as recency, round(score::numeric, 6) as score
from memex.search('ranking', 'u',
                  (array[0, 1, 0]::real[] || array_fill(0::real, array[381]))::public.vector,
                  p_now => '2026-01-31 00:00:00+00');
-- alpha 0 is pure recency (times importance); half-life 30 days
select content, round(recency::numeric, 6) as recency, round(score::numeric, 6) as score
from memex.search('ranking', 'u',
                  (array[0, 0, 1]::real[] || array_fill(0::real, array[381]))::public.vector,
                  p_alpha => 0, p_half_life_days => 30, p_now => '2026-01-31 00:00:00+00');
-- text mode: BM25 over the tenant's memories (english stemming), no vector needed
select content, similarity, round(text_rank::numeric, 6) as bm25,
       round(relevance::numeric, 6) as relevance
from memex.search('ranking', 'u', null, p_query_text => 'tea', p_mode => 'text',
                  p_now => '2026-01-31 00:00:00+00');
-- hybrid (the default when text is given): 0.5 * cosine + 0.5 * bm25 / best bm25, with
-- context (neighbours in time) weighted 0.5; a query of one term ('coffee') weighs the
-- text part by min(1, cosine / (0.9 * best cosine))^3, so the one memory holding it,
-- farther from the query vector than the others, keeps only part of its text match
select content, round(relevance::numeric, 6) as relevance, round(score::numeric, 6) as score
from memex.search('ranking', 'u',
                  (array[1, 0, 0]::real[] || array_fill(0::real, array[381]))::public.vector,
                  p_query_text => 'coffee', p_now => '2026-01-31 00:00:00+00');
-- top_k, and ties: equal scores come newest first
select content from memex.search('ranking', 'u',
    (array[0, 0, 1]::real[] || array_fill(0::real, array[381]))::public.vector,
    p_top_k => 2, p_alpha => 1, p_now => '2026-01-31 00:00:00+00');
-- a memory created after p_now has age 0 (recency 1), not a negative age
select content, round(recency::numeric, 6) as recency, round(score::numeric, 6) as score
from memex.search('ranking', 'u',
                  (array[1, 0, 0]::real[] || array_fill(0::real, array[381]))::public.vector,
                  p_alpha => 0.7, p_now => '2026-01-01 00:00:00+00');
-- a memory is found until it expires, then never
select content
from memex.store('ranking', 'u', 'note that expires',
                 (array[1, 0, 0]::real[] || array_fill(0::real, array[381]))::public.vector,
                 'hand-made', p_created_at => '2026-01-30 00:00:00+00',
                 p_expires_at => '2100-01-01 00:00:00+00');
select count(*) as found from memex.search('ranking', 'u',
    (array[1, 0, 0]::real[] || array_fill(0::real, array[381]))::public.vector,
    p_now => '2099-12-31 00:00:00+00') where content = 'note that expires';
select count(*) as found from memex.search('ranking', 'u',
    (array[1, 0, 0]::real[] || array_fill(0::real, array[381]))::public.vector,
    p_now => '2100-01-02 00:00:00+00') where content = 'note that expires';
-- bounds are checked in SQL (MX422, the field in COLUMN)
select count(*) from memex.search('ranking', 'u',
    (array[1, 0, 0]::real[] || array_fill(0::real, array[381]))::public.vector, p_top_k => 101);
\echo :LAST_ERROR_SQLSTATE
select count(*) from memex.search('ranking', 'u',
    (array[1, 0, 0]::real[] || array_fill(0::real, array[381]))::public.vector, p_alpha => 1.5);
\echo :LAST_ERROR_SQLSTATE
select count(*) from memex.search('ranking', 'u', null, p_mode => 'text');
\echo :LAST_ERROR_SQLSTATE
