-- privileges: tenant-helper
-- memex._candidates_exact: every live memory of one tenant with its cosine similarity and
-- BM25 score: the exact, brute-force candidate set. memex.search uses it for tenants up
-- to settings.exact_scan_max_rows, where a scan through the (agent_id, user_id,
-- created_at) index is fast and recall is 1.0 by construction. BM25 statistics (document
-- frequencies, mean length) come from the same scan, so they are exact for the tenant.
-- The scan reads no tsvector: lengths are the stored memories.tsv_length (revision 0011),
-- and the live memories holding a query term are found through the GIN index on tsv, so
-- only theirs are read, and of each only the query terms are unnested (a 10k-memory
-- tenant of paragraphs: bench/RESULTS.md "Paragraph-sized memories").
-- p_filters (memex.search_filters, built by memex.search) and p_include_superseded keep
-- the memories memex._filtered_memories keeps, before scoring.
-- A memory's importance is memex._valid_importance's (halved once its valid_to passed).
-- Supersession (issue 36): a memory ranks with the best similarity and the best BM25 score
-- of itself and of every memory it superseded, directly or down a chain (memex.store's
-- p_supersedes; superseded_by with superseded_at set, never consolidation's links): a new
-- version worded unlike the question ("Picked up my new Skoda Octavia") is found by the
-- old version's words ("What car do I drive?" / "I drive a Kia Niro"). A memory passes its
-- match to the last of its successors that the search sees (live, of the filters,
-- recorded by as_of: never to a version recorded after it), whether or not it is itself
-- shown (hidden once superseded, shown with p_include_superseded or superseded after
-- as_of). The superseded memories hidden are scored for this only, with the shown
-- memories' BM25 statistics (document frequencies, size, mean length), which leave them
-- out. The links come from memex._supersession_heads (their own index: a tenant without
-- links pays one empty probe). With as_of, the other way too: a memory shown that was
-- superseded after as_of ranks with the best similarity and BM25 score of its later
-- versions (memex._later_versions; recorded after as_of, never returned, scored with the
-- shown memories' statistics as the hidden ones are), so the version valid then is found
-- by any wording of the fact. Nothing is inferred: without links the answers are those of
-- the live memories alone.
-- Each row also carries best_text_rank, the tenant's highest BM25 score (the same on every
-- row; null without a match), which memex.search divides by: taken from the few matching
-- memories here, it spares the search a pass over every candidate (a window).

create or replace function memex._candidates_exact(
    p_agent_id text,
    p_user_id text,
    p_query_embedding public.halfvec,
    p_terms text[],
    p_now timestamptz,
    p_include_superseded boolean,
    p_filters memex.search_filters
)
returns table (id uuid, importance double precision, created_at timestamptz,
               similarity double precision, text_rank double precision,
               best_text_rank double precision)
language sql stable set search_path = pg_catalog, public, pg_temp
as $$
    with every as materialized (
        -- the live memories and, hidden from the results, those superseded at the moment
        -- (memex._filtered_memories with p_include_superseded: the only difference), whose
        -- match their successors inherit below
        select m.id, memex._valid_importance(m.importance, m.valid_to, p_now,
                                             (p_filters).valid_at)
                   as importance, m.created_at,
               1 - (m.embedding <=> p_query_embedding) as similarity, m.tsv_length as dl,
               coalesce(p_include_superseded or m.superseded_at is null
                        or m.superseded_at > (p_filters).as_of, false) as visible  -- null as_of
        from memex._filtered_memories(p_agent_id, p_user_id, p_now, true, p_filters) m
    ),
    live as (
        select e.id, e.importance, e.created_at, e.similarity, e.dl from every e where e.visible
    ),
    heads as materialized (
        -- each superseded memory of the moment with the last of its successors the search
        -- sees (memex._supersession_heads: the tenant's links, through their index)
        select h.id, h.head
        from memex._supersession_heads(p_agent_id, p_user_id, p_now, p_filters) h
    ),
    any_term as (
        select memex._any_term_query(p_terms) as q where cardinality(p_terms) > 0
    ),
    occurrences as (
        -- one row per (memory, query term it holds), the memories found through the
        -- GIN index on tsv; ts_filter keeps only the query terms (marked weight A by
        -- setweight) before unnest, so a paragraph's other ~100 lexemes are not expanded;
        -- tf counts every position of the term; the hidden superseded memories too (their
        -- successors inherit their score), which the document frequencies leave out
        select m.id, t.lexeme, coalesce(cardinality(t.positions), 1) as tf, m.tsv_length as dl,
               coalesce(p_include_superseded or m.superseded_at is null
                        or m.superseded_at > (p_filters).as_of, false) as visible  -- null as_of
        from memex._filtered_memories(p_agent_id, p_user_id, p_now, true, p_filters) m
             cross join any_term a
             cross join lateral unnest(ts_filter(setweight(m.tsv, 'A', p_terms), '{a}')) t
        where m.tsv @@ a.q and t.lexeme = any (p_terms)
    ),
    stats as (
        select count(*)::double precision as n, avg(l.dl) as avgdl from live l
    ),
    bm25 as materialized (
        select o.id, sum(memex._bm25(o.tf, o.dl, f.df, s.n, s.avgdl)) as score
        from occurrences o
        join (select lexeme, count(*) filter (where visible)::double precision as df
              from occurrences group by lexeme) f using (lexeme)
        cross join stats s
        group by o.id
    ),
    inherited as materialized (
        -- what each live head takes from its predecessors: their best similarity and
        -- their best BM25 score (a new version worded unlike the question, the old one
        -- worded like it: the new one is found)
        select h.head as id, max(e.similarity) as similarity, max(b.score) as text_rank
        from heads h join every e on e.id = h.id left join bm25 b on b.id = h.id
        group by h.head
    ),
    later_match as materialized (
        -- as_of only: each memory shown that was superseded after as_of with the best
        -- similarity and BM25 score of its later versions, recorded after it (hidden from
        -- the search), with the shown memories' statistics as the hidden superseded ones'
        -- above (memex._later_match, a cached plan); so the version valid at as_of is found
        -- by any wording of the fact
        select k.id, k.later_similarity as similarity, k.later_text_rank as text_rank
        from memex._later_match(p_agent_id, p_user_id, p_query_embedding, p_now,
                                p_include_superseded, p_filters, p_terms,
                                (select array_agg(coalesce(f.df, 0) order by t.i)
                                 from unnest(p_terms) with ordinality t(lexeme, i)
                                 left join (select o.lexeme,
                                                   count(*) filter (where o.visible)::double precision
                                                       as df
                                            from occurrences o group by o.lexeme) f
                                        on f.lexeme = t.lexeme),
                                (select s.n from stats s), (select s.avgdl from stats s)) k
        where (p_filters).as_of is not null
    )
    select l.id, l.importance, l.created_at,
           greatest(l.similarity, i.similarity, k.similarity),
           greatest(b.score, i.text_rank, k.text_rank),
           greatest((select max(x.score) from bm25 x join live v on v.id = x.id),
                    (select max(x.text_rank) from inherited x join live v on v.id = x.id),
                    (select max(x.text_rank) from later_match x))
    from live l left join bm25 b on b.id = l.id left join inherited i on i.id = l.id
         left join later_match k on k.id = l.id
$$;

comment on function memex._candidates_exact(text, text, public.halfvec, text[], timestamptz,
                                            boolean, memex.search_filters) is
    'All live memories of a tenant with similarity and BM25 score (exact search).';
