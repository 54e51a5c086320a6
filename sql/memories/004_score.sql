-- privileges: tenant-helper
-- memex._score: a memory's score from its relevance, recency and importance.
--   alpha null (a request that sends no alpha): relevance + 0.25 * recency * |relevance|,
--     i.e. relevance * (1 + 0.25 * recency) for relevance >= 0: recency breaks ties among
--     relevant memories (the newer of two equally relevant ones ranks first) and can lift
--     a memory by at most 25 %, so relevant memories of any age stay findable; with
--     |relevance| the newer of two equally poor matches also comes first.
--   alpha given: the memex formula alpha * relevance + (1 - alpha) * recency.
-- Both times importance. The 0.25 is memexdb.memories.models.RECENCY_BOOST (tests/test_params.py).
-- No SET search_path here on purpose (as memex._recency): a SET clause stops the planner
-- from inlining the function, and it runs once per candidate row.
create or replace function memex._score(
    p_relevance double precision,
    p_recency double precision,
    p_importance double precision,
    p_alpha double precision
)
returns double precision
language sql immutable parallel safe
as $$
    select case when p_alpha is null
                then p_relevance + 0.25 * p_recency * pg_catalog.abs(p_relevance)
                else p_alpha * p_relevance + (1 - p_alpha) * p_recency
           end * p_importance
$$;

comment on function memex._score(double precision, double precision, double precision,
                                 double precision) is
    'Score: relevance*(1 + 0.25*recency) when alpha is null, else alpha-blend; times importance.';
