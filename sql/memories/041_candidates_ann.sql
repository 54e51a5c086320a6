-- privileges: tenant-helper
-- memex._candidates_ann: candidates for a tenant in the ANN index (tenants.ann): the union
-- of the p_depth nearest neighbours (fewer with query terms, memex._ann_nearest; the HNSW or
-- ivfflat index chosen with memex.configure_vector_index; memex.search sets its session
-- settings, with iterative scans so the tenant filter does not starve the index), recency
-- candidates among the p_recent most recent memories (recency can outweigh a small lead
-- in similarity: at alpha 0.7 the best ten of a large tenant are mostly recent memories
-- ranked far below the nearest few hundred, bench/RESULTS.md; and alpha = 0 sees what is
-- newest) and the memories matching the query's text best (GIN index): of those holding
-- the rarest query terms (taken rarest first while their holders number at most a
-- budget: 2.5 % of the tenant, at least 10 p_depth) or two of the six rarest (each pair
-- expected in at most twice the budget), the p_depth of highest BM25 times importance;
-- BM25 weighs a term by its rarity, and a memory holding only commoner terms weighs
-- little (ranking every match by ts_rank instead, blind to rarity, read every memory
-- holding a common word and missed the best BM25 matches). Each candidate is scored once,
-- at the end (and the memories read for their text as read, alike), like the exact path,
-- except that the BM25 statistics are the tenant's stored ones: document
-- frequencies from memex.term_stats
-- (kept by triggers on memex.memories, one index probe per query term), the size and the
-- mean length from memex.tenants (memory_count, length_sum), all over the memories
-- memex.tenants.memory_count counts (archived ones too, whatever the filters). A query of
-- at most eight terms some memory holds is scored by memex._held_bm25, one expression; a
-- longer one by a subquery over the memory's query terms.
-- p_filters (memex.search_filters, built by memex.search) and p_include_superseded keep
-- the memories memex._filtered_memories keeps, inside each branch (the HNSW iterative scan
-- goes on until it has p_depth that match). The steps that read the tenant in an index's
-- order (memex._ann_nearest_rows, memex._ann_newest_rows, memex._ann_recent_entries) and
-- the text lookups (memex._text_rows) are planned for each call: the filters are constants
-- there, and a filter not given folds away. This statement has one generic plan
-- (force_generic_plan below), where the filters are a parameter. A
-- memory's importance is memex._valid_importance's (halved once its valid_to passed; the
-- pruning bound below reads the stored importance, an upper bound of it).
-- Supersession (issue 36), as memex._candidates_exact: a memory ranks with the best
-- similarity and BM25 score of itself and of the memories it superseded, directly or down
-- a chain. Here the superseded memories hidden at the moment are among the nearest and the
-- text-matching ones (they take their places there, as they would if shown); each such
-- memory with a successor (contributors) is walked, by primary key, to the last of its
-- successors the search sees (live, of the filters, recorded by as_of), which becomes a
-- candidate (with its neighbours in time) and inherits its match. The pruning bound
-- (least similarity among all the nearest) still holds: inheriting only raises the heads,
-- which are candidates anyway. With as_of, a memory shown that was superseded after it
-- is a candidate with the best match of its later versions (memex._later_match,
-- memex._later_versions), as in memex._candidates_exact. A tenant without supersession links (links: one probe of
-- memories_supersedes_idx, revision 0036, which holds the successors only) skips
-- the contributor and head steps at run time (their One-Time Filter), so it pays the probe
-- and the plan's empty steps, nothing per candidate. p_include_superseded null says the
-- caller found no link (memex.search probes first): superseded memories are left out, as
-- with false, and the supersession steps are skipped at run time (One-Time Filters of the
-- cached plan; they were planned away when this statement was planned per call, where
-- planning them cost ~0.4-1 ms, bench/RESULTS.md "Supersession out of the plan").
--
-- Recency candidates that cannot reach the top k are skipped unread. When p_top_k is
-- given (memex.search's vector-only ranking, where the score is memex._score(similarity,
-- recency, importance, p_alpha)) and the request filters on neither memory types nor
-- metadata (memex._ann_bounded, the one statement of that condition), the newest p_recent
-- entries of the tenant's (agent_id, user_id, created_at, id) index, which carries
-- importance (revisions 0012, 0022), are read without the table: a memory that is not among the
-- p_depth nearest has a similarity of at most the least similarity among them (s_min), so
-- its score is at most memex._score(s_min, its recency, its importance, p_alpha). Only
-- the entries whose bound reaches the k-th best score already known (among the nearest
-- and, when alpha is given, the p_depth newest, scored in full) are read from the table
-- and scored. The top k is then the same as ranking all p_recent newest, with one caveat:
-- the ANN index's order is approximate, so a memory more similar than s_min that the
-- index did not return can be skipped (the old union scored it if it was among the
-- newest). Entries of memories that are archived, expired or of another embedding model
-- count towards p_recent here (they are dropped when read). With memory type or metadata
-- filters, query terms or the context window (p_top_k null: relevance is not the
-- similarity) the p_recent newest live memories are all scored.
--
-- p_neighbours (memex.search passes 2 when its context window is on) adds the p_neighbours
-- live memories just before and just after each nearest and text-matching memory, in the
-- window's (created_at, id) order: a memory's context relevance comes from its true
-- neighbours in time, as on the exact path, not from whichever other candidates are
-- next to it, and a memory next to a strong hit can be ranked on its context.
create or replace function memex._candidates_ann(
    p_agent_id text,
    p_user_id text,
    p_query_embedding public.halfvec,
    p_terms text[],
    p_now timestamptz,
    p_depth integer,
    p_recent integer,
    p_filters memex.search_filters,
    p_top_k integer default null,
    p_alpha double precision default null,
    p_half_life_days double precision default null,
    p_neighbours integer default 0,
    p_include_superseded boolean default false
)
returns setof memex._candidate
language sql stable set search_path = pg_catalog, public, pg_temp
-- One generic plan per session: planned for each call, this statement was ~5 ms of a
-- 200,000-memory tenant's default request (bench/RESULTS.md, "The default request's plan,
-- cached"). The steps whose plan depends on the tenant's size (the nearest neighbours, the
-- newest memories, the newest index entries: a generic plan assumes an average-sized
-- tenant and sorts the whole tenant instead of reading the index in order) are small
-- functions planned per call (memex._ann_nearest_rows, memex._ann_newest_rows,
-- memex._ann_recent_entries); every other read of memex.memories here is by primary key
-- or a probe of a few rows in index order.
set plan_cache_mode = force_generic_plan
-- The candidates leave in memex.search's window order (created_at, id): the generic plan
-- joined the heads and later versions (empty without links or as_of) to them by merge
-- joins, which sorted all ~1,700 of a big tenant's candidates, tsvectors and all, by id
-- first (CPU -2 to -5 % of the default request, bench/RESULTS.md "Issue 39 item 0
-- (session 9)"); hash joins keep their order.
set enable_mergejoin = off
as $$
    with live as not materialized (
        select m.* from memex._filtered_memories(p_agent_id, p_user_id, p_now,
                                             p_include_superseded, p_filters) m
    ),
    links as materialized (
        -- whether the tenant has a supersession link at all (its successors are the whole
        -- partial index memories_supersedes_idx: an empty probe without links)
        select exists (select from memex.memories s
                       where s.agent_id = p_agent_id and s.user_id = p_user_id
                         and s.supersedes is not null) as present
    ),
    any_term as (
        select memex._any_term_query(p_terms) as q where cardinality(p_terms) > 0
    ),
    frequencies as materialized (
        -- each query term's document frequency, one probe of memex.term_stats (kept by
        -- triggers on memex.memories) instead of a count through the GIN index (~26 ms a
        -- query at 50k memories, bench/RESULTS.md "Term statistics")
        select t.lexeme,
               coalesce((select s.df from memex.term_stats s
                         where s.agent_id = p_agent_id and s.user_id = p_user_id
                           and s.lexeme = t.lexeme), 0)::double precision as df
        from unnest(p_terms) t(lexeme)
    ),
    stats as (
        -- the tenant's size and mean length from memex.tenants (counting 100k+ rows per
        -- query would not do; a sample of the newest moved scores near the tenth place)
        select greatest(coalesce(max(t.memory_count), 1), 1)::double precision as n,
               -- the memories read for their text: 2.5 % of the tenant, at least 10 p_depth
               greatest(10 * p_depth, coalesce(max(t.memory_count), 1) / 40) as budget,
               coalesce(max(t.length_sum)::double precision
                        / nullif(max(t.memory_count), 0), 1) as avgdl
        from memex.tenants t where t.agent_id = p_agent_id and t.user_id = p_user_id
    ),
    weights as materialized (
        -- what a memory's BM25 score is computed from: the query terms some memory holds,
        -- rarest first, as one-lexeme queries with their document frequencies, in the
        -- eight columns memex._held_bm25 takes (held: their number; more than eight are
        -- scored by the subquery instead), and the tenant's statistics. A term no memory
        -- holds weighs nothing.
        select a.held, s.n, s.avgdl,
               a.terms[1] as term1, a.df[1] as df1,
               a.terms[2] as term2, a.df[2] as df2,
               a.terms[3] as term3, a.df[3] as df3,
               a.terms[4] as term4, a.df[4] as df4,
               a.terms[5] as term5, a.df[5] as df5,
               a.terms[6] as term6, a.df[6] as df6,
               a.terms[7] as term7, a.df[7] as df7,
               a.terms[8] as term8, a.df[8] as df8
        from (select count(*) as held,
                     array_agg(quote_literal(f.lexeme)::tsquery order by f.df, f.lexeme) as terms,
                     array_agg(f.df order by f.df, f.lexeme) as df
              from frequencies f where f.df > 0) a
        cross join stats s
    ),
    nearest_any as materialized (
        -- Each branch reads the columns the ranking needs (the tsvector for the BM25 score,
        -- computed once per candidate at the end) from the rows its index scan has
        -- already read. The superseded memories hidden at the moment are among them
        -- (hidden): they rank their successors. memex._ann_nearest_rows is planned per
        -- call (the index's choice depends on the tenant's size), this statement once.
        select n.id, n.importance, n.created_at, n.similarity, n.tsv, n.tsv_length,
               n.hidden, n.successor
        from memex._ann_nearest_rows(p_agent_id, p_user_id, p_query_embedding, p_now,
                                     p_include_superseded, p_filters,
                                     memex._ann_nearest(p_depth, p_terms)) n  -- fewer with terms
        where p_query_embedding is not null
    ),
    nearest as (
        select n.id, n.importance, n.created_at, n.similarity, n.tsv, n.tsv_length
        from nearest_any n where not n.hidden
    ),
    newest as materialized (
        -- all p_recent newest without pruning; the p_depth newest (scored in full, to
        -- raise the k-th score before the bound is tested) with it and alpha given
        -- (memex._ann_newest_rows: planned per call, as the nearest)
        select n.id, n.importance, n.created_at, n.similarity, n.tsv, n.tsv_length
        from memex._ann_newest_rows(
                 p_agent_id, p_user_id, p_query_embedding, p_now, p_include_superseded,
                 p_filters,
                 case when memex._ann_bounded(p_top_k, p_query_embedding, p_terms,
                                              (p_filters).memory_types, (p_filters).metadata)
                      then p_depth else p_recent end) n
        where p_alpha is not null
           or not memex._ann_bounded(p_top_k, p_query_embedding, p_terms,
                                     (p_filters).memory_types, (p_filters).metadata)
    ),
    rarest as (  -- the six rarest query terms held at all
        select f.lexeme, f.df from frequencies f where f.df > 0
        order by f.df, f.lexeme limit 6
    ),
    chosen as (
        -- the terms of the rarest-terms query: taken rarest first while their holders
        -- number at most the budget (always the rarest)
        select t.lexeme, t.df
        from (select f.lexeme, f.df,
                     sum(f.df) over (order by f.df, f.lexeme) - f.df as rarer
              from frequencies f where f.df > 0) t
        cross join stats s
        where t.rarer = 0 or t.rarer + t.df <= s.budget
    ),
    text_query as (
        -- the memories worth reading for their text: those holding the rarest query terms,
        -- taken rarest first while their holders number at most the budget (always the
        -- rarest: one query 'a | b'), and those holding two of the six rarest terms, each
        -- pair expected (terms independent) in at most twice the budget. In a large tenant
        -- even the rarest term is held by hundreds, and the best BM25 matches hold several
        -- commoner terms (bench/RESULTS.md, "Term statistics per tenant"); a memory holding
        -- only terms commoner than these weighs little in BM25. The pairs are queries of
        -- their own ('a & b', one GIN scan each, which skips through the commoner term's
        -- postings), not one 'a & b | a & c | ...', for which GIN reads every posting of
        -- all six terms: 5.8 -> 3.7 ms for six pairs of common terms at 200,000 memories.
        -- A pair with a term of the rarest-terms query is not read when that query reads
        -- all its matches (their document frequencies, which count every memory of the
        -- tenant holding them, sum to at most its read limit, twice the budget): each of
        -- the pair's memories is one of those, read already. Reading them again cost ~a
        -- quarter of the text step's rows (bench/RESULTS.md, "Issue 39 item 0 (session
        -- 8)"), and used up the pairs' budget before the pairs of commoner terms.
        select (select array[t.q]
                from (select string_agg(quote_literal(t.lexeme), ' | ')::tsquery as q
                      from chosen t) t
                where t.q is not null) as terms,
               (select array_agg(format('%s & %s', quote_literal(a.lexeme),
                                        quote_literal(b.lexeme))::tsquery
                                 order by a.df * b.df, a.lexeme, b.lexeme)
                from rarest a join rarest b on a.lexeme < b.lexeme
                cross join stats s
                where a.df * b.df / s.n <= 2 * s.budget
                  and not ((select sum(c.df) from chosen c) <= 2 * s.budget
                           and exists (select from chosen c
                                       where c.lexeme in (a.lexeme, b.lexeme)))) as pairs
    ),
    text_read as (
        -- each query read apart, so that the memories holding a pair are not crowded out
        -- by those holding one term, at most twice the budget of those (a bound for when
        -- the rarest term alone is that common: an arbitrary part of its holders; reading
        -- only the budget cut the slowest requests by ~25 % but lost recall on prose) and
        -- the budget of these; scored as read, the score written as at the end. The pairs
        -- are read one after the other, the rarest pair first (the nested loop keeps the
        -- array's order), so the budget cuts the commonest pair, not an arbitrary part of
        -- all of them: a memory holding three query terms is in its rarest pair
        -- (bench/RESULTS.md, "Big tenants"). Read without their vectors (memex._text_rows):
        -- the similarity of the p_depth kept is computed in text_hits.
        select l.id, memex._valid_importance(l.importance, l.valid_to, p_now,
                                             (p_filters).valid_at)
                   as importance, l.created_at, l.hidden, l.successor,
               case when coalesce(cardinality(p_terms), 0) = 0 then null  -- none without terms
                    when w.held <= 8
                    then memex._held_bm25(l.tsv, l.tsv_length, w.n, w.avgdl,
                                          w.term1, w.df1,
                                          w.term2, w.df2,
                                          w.term3, w.df3,
                                          w.term4, w.df4,
                                          w.term5, w.df5,
                                          w.term6, w.df6,
                                          w.term7, w.df7,
                                          w.term8, w.df8)
                    else (select sum(memex._bm25(coalesce(cardinality(o.positions), 1),
                                                 l.tsv_length, f.df, w.n, w.avgdl))
                          from unnest(ts_filter(setweight(l.tsv, 'A', p_terms), '{a}')) o
                          join frequencies f on f.lexeme = o.lexeme) end as text_rank
        from text_query tq
        cross join weights w
        cross join lateral (values (tq.terms, 2), (tq.pairs, 1)) v(q, budgets)
        cross join lateral (
            select l.*
            from unnest(v.q) u(q)
            cross join lateral (
                -- the live memories (and those superseded at the moment, hidden: as the
                -- nearest) matching u.q, through the GIN index: memex._text_rows
                -- (owned by memex_text_lookup, BYPASSRLS, when it exists): under the
                -- forced row-level security of memex.memories, `tsv @@ u.q` (not
                -- leakproof) is no index condition, and the tenant was scanned per query
                -- (bench/RESULTS.md, "The default request under row-level security")
                select m.*,
                       not coalesce(p_include_superseded or m.superseded_at is null
                                    or m.superseded_at > (p_filters).as_of,
                                    false) as hidden,
                       case when m.superseded_at is not null then m.superseded_by end
                           as successor
                from memex._text_rows(p_agent_id, p_user_id, p_now,
                                      p_include_superseded is not null, p_filters, u.q,
                                      (select v.budgets * s.budget from stats s)) m
                where coalesce(cardinality(p_terms), 0) > 0  -- a One-Time Filter
            ) l
            limit (select v.budgets * s.budget from stats s)
        ) l
        -- the score computed here, once a row, and only it carried on: text_hits' sort
        -- (in the cached generic plan, where its case on p_include_superseded is not
        -- folded away) otherwise carried every row's tsvector and the score's other
        -- inputs through the sort to compute the score again after it, and spilled to disk
        -- past work_mem at ~6,000 rows (bench/RESULTS.md, "Issue 39 item 0 (session 8)")
        offset 0
    ),
    text_hits as materialized (
        -- of those, the p_depth of highest BM25 times importance: importance multiplies
        -- the score, so a weaker match marked important can outrank a better one (ranked
        -- by BM25 alone, recall@10 fell from 0.94 to 0.91 at 200,000 memories; one
        -- ranking for all terms and pairs: bench/RESULTS.md, "Big tenants"). Each is a hit
        -- whose neighbours in time are probed: 2 p_depth of them cost 15-20 % more of a
        -- 200,000-memory tenant's default request for recall@10 0.990 -> 0.993 (prose) and
        -- 1.000 -> 1.000 (Zipf) against the exact path (bench/RESULTS.md, "The big
        -- tenant's text hits, halved"). A count, not a bound: a bound on what a hit's
        -- neighbours can reach (the lending weight, their importance up to 2) kept every
        -- hit. Their similarity is computed for these only, from their vectors looked up
        -- by primary key with their tsvectors (text_read reads no vector, and the sort
        -- carries no tsvector: bench/RESULTS.md, "The default request's plan, cached").
        select h.id, h.importance, h.created_at,
               1 - (v.embedding <=> p_query_embedding) as similarity, v.tsv, v.tsv_length,
               h.hidden, h.successor, h.text_rank
        from (
            select distinct on (r.text_rank * r.importance, r.id)
                   r.id, r.importance, r.created_at, r.hidden, r.successor,
                   -- for contributors: the superseded ones' only, and none without links
                   -- (null p_include_superseded), whose plan then sorts the rows read as
                   -- before issue 36 (the score's inputs carried through the sort and the
                   -- score computed again for every row kept cost ~4 % of a default
                   -- request, bench/RESULTS.md)
                   case when p_include_superseded is not null and r.successor is not null
                        then r.text_rank end as text_rank
            from text_read r
            order by r.text_rank * r.importance desc nulls last, r.id
            limit p_depth
        ) h
        cross join lateral (
            select m.embedding, m.tsv, m.tsv_length
            from memex.memories m where m.id = h.id offset 0
        ) v
    ),
    contributors as materialized (
        -- the nearest and text-matching memories that a newer one superseded (hidden at
        -- the moment, or shown with p_include_superseded or superseded after as_of),
        -- with what their heads inherit: similarity, and the BM25 score of those among the
        -- text-matching ones (scored as read; a nearest one outside them, whose BM25 is
        -- below theirs, passes its similarity only)
        select c.id, c.successor, max(c.similarity) as similarity,
               max(c.text_rank) as text_rank
        from (select n.id, n.successor, n.similarity, null::double precision as text_rank
              from nearest_any n where n.successor is not null
              union all
              select t.id, t.successor, t.similarity, t.text_rank
              from text_hits t where t.successor is not null) c
        -- skipped when the caller found no link (null) or there is none: One-Time Filters
        where p_include_superseded is not null and (select k.present from links k)
        group by c.id, c.successor
    ),
    heads as materialized (
        -- each contributor's head, once, when shown, with what it inherits from the
        -- memories it superseded: their best similarity and BM25 score (memex._ann_heads:
        -- the walk and the heads' rows in a cached plan of their own)
        select h.head, h.importance, h.created_at, h.similarity, h.tsv, h.tsv_length,
               h.inherited_similarity, h.inherited_text_rank
        from memex._ann_heads(p_agent_id, p_user_id, p_query_embedding, p_now,
                              coalesce(p_include_superseded, false), p_filters,
                              (select array_agg(c.id order by c.id) from contributors c),
                              (select array_agg(c.similarity order by c.id) from contributors c),
                              (select array_agg(c.text_rank order by c.id) from contributors c)) h
        where p_include_superseded is not null  -- not called without links
          and (select k.present from links k)
    ),
    later as materialized (
        -- as_of only (a One-Time Filter skips it without as_of or links): the memories shown that
        -- were superseded after as_of, each a candidate with the best similarity and BM25
        -- score of its later versions, recorded after as_of (memex._later_match, a cached
        -- plan), as memex._candidates_exact
        select k.id, k.importance, k.created_at, k.similarity, k.tsv, k.tsv_length,
               k.later_similarity, k.later_text_rank
        from memex._later_match(p_agent_id, p_user_id, p_query_embedding, p_now,
                              p_include_superseded, p_filters,
                              (select array_agg(f.lexeme order by f.lexeme) from frequencies f),
                              (select array_agg(f.df order by f.lexeme) from frequencies f),
                              (select w.n from stats w), (select w.avgdl from stats w)) k
        where (p_filters).as_of is not null and p_include_superseded is not null
    ),
    hits as materialized (
        -- the nearest and text-matching memories shown, the heads of those superseded and
        -- the memories with later versions (as_of), whose neighbours are candidates
        select h.id, h.created_at from nearest h
        union select h.id, h.created_at from text_hits h where not h.hidden
        union select h.head, h.created_at from heads h
        union select k.id, k.created_at from later k
    ),
    neighbours as (
        -- the p_neighbours live memories just before and just after each hit, in
        -- memex.search's window order (created_at, id): its context takes relevance from
        -- them, and they take it from the hit. One call of memex._ann_neighbour_rows for
        -- all the hits (owned by memex_text_lookup, BYPASSRLS, when it exists): under the
        -- forced row-level security of memex.memories the tenant key's functions (not
        -- leakproof) are no index condition, and the ~600 probes of a big tenant's request
        -- descended memories_tenant_recent_idx (two text columns) instead of
        -- memories_tenant_key_recent_idx (revision 0025, a 64-bit key); bench/RESULTS.md,
        -- "The neighbour probes by the tenant key". A One-Time Filter skips it without a
        -- context window.
        select n.id, memex._valid_importance(n.importance, n.valid_to, p_now,
                                             (p_filters).valid_at)
                   as importance, n.created_at, n.similarity, n.tsv, n.tsv_length
        from memex._ann_neighbour_rows(p_agent_id, p_user_id, p_query_embedding, p_now,
                                       p_include_superseded, p_filters,
                                       (select array_agg(h.created_at order by h.id) from hits h),
                                       (select array_agg(h.id order by h.id) from hits h),
                                       p_neighbours) n
        where p_neighbours > 0
    ),
    bar as materialized (  -- the least similarity among the nearest and the k-th best score known
        select (select min(n.similarity) from nearest_any n) as similarity,
               (select s.score
                from (select memex._score(k.similarity,
                                          memex._recency(k.created_at, p_now, p_half_life_days),
                                          k.importance, p_alpha) as score
                      from (select n.id, n.importance, n.created_at, n.similarity from nearest n
                            union
                            select n.id, n.importance, n.created_at, n.similarity
                            from newest n) k) s
                order by s.score desc offset p_top_k - 1 limit 1) as score
        where memex._ann_bounded(p_top_k, p_query_embedding, p_terms,
                                 (p_filters).memory_types, (p_filters).metadata)
    ),
    entries as (  -- with pruning: the p_recent newest index entries (an index-only scan)
        select r.id, r.created_at, r.importance
        from memex._ann_recent_entries(p_agent_id, p_user_id, p_recent) r
        where memex._ann_bounded(p_top_k, p_query_embedding, p_terms,
                                 (p_filters).memory_types, (p_filters).metadata)
    ),
    reachable as (  -- the entries whose bound reaches the k-th score, read
        select l.id, memex._valid_importance(l.importance, l.valid_to, p_now,
                                             (p_filters).valid_at)
                   as importance, l.created_at,
               1 - (l.embedding <=> p_query_embedding) as similarity, l.tsv, l.tsv_length
        from entries e cross join bar b
        cross join lateral (  -- by primary key, whatever the plan's guess of the tenant
            select l.* from live l where l.id = e.id offset 0
        ) l
        where b.score is null  -- fewer than k known: no bound
           or memex._score(b.similarity, memex._recency(e.created_at, p_now, p_half_life_days),
                           e.importance::double precision, p_alpha) >= b.score
    ),
    candidates as (
        -- each memory once: every branch reads a memory's values alike; sorted, since a
        -- tsvector has no hash function to union whole rows by (grouping by the other
        -- columns measured ~3 % slower), and in memex.search's window order, whose sort
        -- then finds the rows in order; the heads of superseded matches among them
        select distinct on (c.created_at, c.id) c.*
        from (select * from nearest
              union all select * from newest
              union all select * from reachable
              union all select t.id, t.importance, t.created_at, t.similarity, t.tsv,
                               t.tsv_length
                        from text_hits t where not t.hidden
              union all select h.head, h.importance, h.created_at, h.similarity, h.tsv,
                               h.tsv_length
                        from heads h
              union all select k.id, k.importance, k.created_at, k.similarity, k.tsv,
                               k.tsv_length
                        from later k
              union all select * from neighbours) c
        order by c.created_at, c.id
    )
    -- scored once each: BM25 for the memories holding a query term, as in text_read; the
    -- weights join keeps the candidates' order; a head takes the best of its own and its
    -- predecessors' similarity and BM25 score
    select c.id, c.importance, c.created_at,
           greatest(c.similarity, i.inherited_similarity, k.later_similarity),
           greatest(
           case when coalesce(cardinality(p_terms), 0) > 0  -- none without terms
                     and c.tsv @@ (select a.q from any_term a)
                then case when w.held <= 8
                         then memex._held_bm25(c.tsv, c.tsv_length, w.n, w.avgdl,
                                               w.term1, w.df1,
                                               w.term2, w.df2,
                                               w.term3, w.df3,
                                               w.term4, w.df4,
                                               w.term5, w.df5,
                                               w.term6, w.df6,
                                               w.term7, w.df7,
                                               w.term8, w.df8)
                         else (select sum(memex._bm25(coalesce(cardinality(o.positions), 1),
                                                      c.tsv_length, f.df, w.n, w.avgdl))
                               from unnest(ts_filter(setweight(c.tsv, 'A', p_terms), '{a}')) o
                               join frequencies f on f.lexeme = o.lexeme) end end,
           i.inherited_text_rank, k.later_text_rank)
    from candidates c cross join weights w left join heads i on i.head = c.id
         left join later k on k.id = c.id
$$;

comment on function memex._candidates_ann(text, text, public.halfvec, text[], timestamptz, integer,
                                          integer, memex.search_filters, integer,
                                          double precision, double precision, integer,
                                          boolean) is
    'Nearest, newest (those that can reach the top k) and best text-matching memories of a'
    ' large tenant, scored (ANN search).';
