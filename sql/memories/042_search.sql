-- privileges: tenant
-- memex.search: the memories of one tenant ranked by relevance and recency, in one call.
--
--   mode      = p_mode, or when not given (null, the default): 'hybrid' if no alpha is
--               given and there is a query text, else 'vector' (memex's)
--   relevance = cosine similarity                              (mode 'vector')
--             | bm25 / best bm25                               (mode 'text')
--             | w * cosine + (1 - w) * bm25 / best bm25        (mode 'hybrid', w =
--                                                               settings.hybrid_vector_weight)
--               where a query of one term (stop words aside) weighs its text part by
--               min(1, max(cosine, 0) / (0.9 * best cosine))^3: a one-word match counts
--               as far as the memory is also near the query
--   then, with context weight c (default 0 in mode 'vector', settings.context_weight
--   otherwise), each memory also takes relevance from its neighbours in time:
--   relevance = max((r + c * max(r of the memories just before and after)
--                       + c/2 * max(r of the memories two before and after)) / (1 + 1.5 c),
--                   r - 0.2 |r|)
--               (the window lends relevance, and costs a memory at most a fifth of its own)
--   recency   = exp(-ln2 / half_life_days * age_days), half_life_days when not given
--               (null, the default): 90 without alpha, 30 (memex's) with alpha
--   score     = (relevance + 0.25 * recency * |relevance|) * importance
--                   when alpha is not given (null, the default): recency is a bounded
--                   tiebreaker, at most 25 % on top of relevance (bench/RESULTS.md,
--                   "Recall by default"), so the past stays findable and the newer of
--                   two equally relevant memories (an updated fact) ranks first
--             | (alpha * relevance + (1 - alpha) * recency) * importance
--                   when alpha is given (the memex formula)
--   then near-duplicates are pushed down (memex._duplicates_last): among the best-scored
--   hits (twice top_k and 20 more, at most 100, or top_k), one whose content is the same
--   as a higher-ranked hit's (case and punctuation aside) scores just below the lowest
--   distinct hit (when not lower already), so five copies of one line do not fill the top
--   five; nothing is dropped (bench/RESULTS.md, "Near-duplicates pushed down")
--
-- With importance 1.0 (the default), mode 'vector' and an explicit alpha, this is exactly
-- the memex formula (near-duplicates aside); importance 0..2 scales a memory's score. BM25 matches any query term
-- (english stemming, stop words dropped). Tenants are ranked exactly (every row scored) until they are moved
-- into the ANN index (tenants.ann: memex.maintenance does it past
-- settings.exact_scan_max_rows); those rank the union of the nearest (from the ANN index
-- chosen with memex.configure_vector_index, HNSW by default; fewer with query terms,
-- memex._ann_nearest), newest and best text-matching settings.ann_candidates rows (never fewer than
-- top_k when that many match; the newest settings.ann_recent_candidates when alpha is
-- given, since recency then outweighs relevance) and, with context, the two memories before and after each
-- nearest and text-matching one. Ties break on newer first, then id. p_now fixes "now" for replays and tests.
-- p_metadata (a JSON object; null: any) keeps only memories whose metadata contains it
-- (metadata @> p_metadata), before ranking: it filters the candidates, not the top k.
-- Memories archived by consolidation are ranked too with p_include_archived (by default
-- their summary stands in for them).
-- The filters (p_memory_types, p_embedding_model, p_metadata, p_include_archived, p_as_of,
-- p_valid_at, p_created_after, p_created_before) reach the helpers as one value,
-- memex.search_filters (revision 0035), applied in one place, memex._filtered_memories.
--
-- Time (issue 36). Memories superseded by a newer one (memex.store's p_supersedes) are left
-- out unless p_include_superseded; included, each ranks after its successor when both are
-- returned (memex._successors_first lowers its score just below its successor's). A
-- memory ranks with the best similarity and BM25 match of the memories it superseded
-- (memex._candidates_exact, memex._candidates_ann): the new version of a fact is found by
-- the old version's words; never a version recorded after p_as_of. With p_as_of, a memory
-- shown that was superseded after it ranks with the best similarity and BM25 match of its
-- later versions (memex._later_versions; never returned): the version valid then is found
-- by any wording of the fact ("Where did I live?": "Our flat is on Alder Lane in Porto",
-- later "I live in Lyon now"; bench/RESULTS.md, "The version valid then is found by its
-- later wording"). A
-- memory whose valid_to has passed ranks with half its importance (memex._valid_importance:
-- a fact valid now outranks one that no longer holds; not an exclusion). p_valid_at keeps
-- only the facts valid at that moment (valid_from, or created_at when unset, <= p_valid_at
-- < valid_to or open; then no halving); p_created_after (inclusive) and p_created_before
-- (exclusive) bound created_at. p_as_of answers what the tenant's memory held at that
-- moment: memories created by then and not yet superseded, archived or expired then,
-- ranked with recency (and validity) from p_as_of (it replaces p_now). Limitation: a
-- memory updated after p_as_of is ranked and returned with its current content and
-- embedding (revisions keep no embedding; memex.get_memory's p_as_of reads the content
-- it had). Forgotten and erased memories are gone, whatever p_as_of.
create or replace function memex.search(
    p_agent_id text,
    p_user_id text,
    p_query_embedding vector,
    p_top_k integer default 10,
    p_alpha double precision default null,
    p_half_life_days double precision default null,
    p_memory_types memex.memory_type[] default null,
    p_query_text text default null,
    p_mode text default null,
    p_embedding_model text default null,
    p_now timestamptz default null,
    p_context_weight double precision default null,
    p_metadata jsonb default null,
    p_include_archived boolean default false,
    p_include_superseded boolean default false,
    p_as_of timestamptz default null,
    p_valid_at timestamptz default null,
    p_created_after timestamptz default null,
    p_created_before timestamptz default null
)
returns setof memex.search_hit
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
-- One generic plan per statement, reused by every call: planning the ranking query anew
-- for each call was half of a small tenant's search (0.58 -> 0.27 ms of backend CPU,
-- bench/RESULTS.md "Load test"). Nothing here gains from the caller's values: the exact
-- branch is a tenant index scan whatever the tenant, and the ANN candidates' reads that
-- depend on the tenant's size are planned per call inside memex._candidates_ann (its
-- helpers memex._ann_nearest_rows, memex._ann_newest_rows, memex._ann_recent_entries).
set plan_cache_mode = force_generic_plan
as $$
declare
    v_now      timestamptz := coalesce(p_as_of, p_now, now());
    -- the query at the column's precision (halfvec, revision 0037), cast once here: the
    -- candidate functions take it as is, and no scan casts it again per memory
    v_query    public.halfvec;
    v_terms    text[];
    -- a query of one term (after stop words): its text match counts as far as the
    -- memory is also near the query (the "normalised" step below)
    v_one_term boolean;
    v_context  double precision;
    -- the settings are read only where used (each read: a function call and a lookup):
    -- the memex request (exact tenant, mode 'vector', no context) reads none of them
    v_weight   double precision;  -- settings.hybrid_vector_weight, mode 'hybrid' only
    v_exact    boolean;
    v_depth    integer;
    -- the best-scored hits compared for near-duplicates (memex._duplicates_last): twice
    -- top_k and 20 more, at most 100 (or top_k)
    v_pool     integer := greatest(p_top_k, least(2 * p_top_k + 20, 100));
    v_recent   integer;
    v_hits     memex.search_hit[];  -- the top k, near-duplicates pushed down
    -- the vector path's best v_pool hits, in search's order (memex._lowered_repeats)
    v_ids      uuid[];
    v_created  timestamptz[];
    v_similarity double precision[];
    v_recency  double precision[];
    v_scores   double precision[];
    v_contents text[];
    v_lowered  double precision[];  -- v_scores with the repeats lowered (null: none)
    v_gucs     text[];  -- session settings of the ANN index (memex._vector_index_settings)
    v_values   text[];
    v_defaults text[];
    v_saved    text[];
    v_shown    boolean := coalesce(p_include_superseded, false);  -- null: no link (041)
    v_links    boolean;  -- exact vector path: the tenant has supersession links
    v_heads    uuid[];  -- exact vector path with links: the heads of superseded memories
    v_inherited double precision[];  -- and each one's best similarity among them
    v_later    uuid[];  -- exact vector path, as_of: the memories superseded after as_of
    v_later_similarity double precision[];  -- and each one's best among its later versions
    -- the filters, one value for the helpers (memex.search_filters, revision 0035, built by
    -- memex._search_filters: its attributes in their order); memex._filtered_memories
    -- applies them
    v_filters  memex.search_filters := memex._search_filters(
                                           p_memory_types, p_embedding_model, p_metadata,
                                           p_include_archived, p_as_of, p_valid_at,
                                           p_created_after, p_created_before);
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    if p_top_k is null or p_top_k not between 1 and 100 then
        perform memex._invalid('top_k', 'must be between 1 and 100');
    end if;
    if p_alpha is not null and p_alpha not between 0 and 1 then
        perform memex._invalid('alpha', 'must be between 0 and 1');
    end if;
    -- a shorter half-life would overflow the decay's exponent (ln 2 / half-life * age)
    if p_half_life_days is not null and p_half_life_days not between 0.001 and 36500 then
        perform memex._invalid('half_life_days', 'must be between 0.001 and 36500 days');
    end if;
    -- no half-life sent: 90 days for the default formula (a tiebreak that still tells
    -- apart memories months apart), memex's 30 days when alpha is sent
    p_half_life_days := coalesce(p_half_life_days, case when p_alpha is null then 90 else 30 end);
    -- no mode sent: hybrid for the default ranking (no alpha) when there is a query text;
    -- vector (memex's) when alpha is sent or there is only an embedding
    p_mode := coalesce(p_mode,
                       case when p_alpha is null
                                 and coalesce(btrim(p_query_text, E' \t\n\r\f\x0b'), '') <> ''
                            then 'hybrid' else 'vector' end);
    if p_mode not in ('vector', 'text', 'hybrid') then
        perform memex._invalid('mode', 'must be one of vector, text, hybrid');
    end if;
    if p_mode <> 'text' then
        if p_query_embedding is null then
            perform memex._invalid('query_embedding', 'is required in mode ' || p_mode);
        end if;
        if public.vector_dims(p_query_embedding) <> memex.embedding_dims() then
            perform memex._invalid('query_embedding',
                format('must have %s dimensions, not %s', memex.embedding_dims(),
                       public.vector_dims(p_query_embedding)));
        end if;
        v_query := p_query_embedding;
    else
        p_query_embedding := null;
    end if;
    if p_mode <> 'vector' then
        if coalesce(btrim(p_query_text, E' \t\n\r\f\x0b'), '') = '' then
            perform memex._invalid('query_text', 'is required in mode ' || p_mode);
        end if;
        if length(p_query_text) > 8000 then
            perform memex._invalid('query_text', 'must be at most 8000 characters');
        end if;
        v_terms := memex._query_terms(p_query_text);
    end if;
    v_one_term := p_mode = 'hybrid' and cardinality(v_terms) = 1;
    if p_mode = 'hybrid' then
        v_weight := memex._setting('hybrid_vector_weight', '0.5')::double precision;
    end if;
    if p_context_weight is not null and p_context_weight not between 0 and 1 then
        perform memex._invalid('context_weight', 'must be between 0 and 1');
    end if;
    if p_metadata is not null then
        perform memex._check_metadata(p_metadata);
    end if;
    -- Weights to 6 decimals: a subnormal weight (5e-324) times a relevance would make
    -- Postgres raise an underflow error instead of ranking.
    p_alpha := round(p_alpha::numeric, 6)::double precision;
    p_context_weight := round(p_context_weight::numeric, 6)::double precision;
    v_context := coalesce(p_context_weight,
                          case when p_mode = 'vector' then 0
                               else memex._setting('context_weight', '0.5')::double precision end);
    perform memex._authorize(p_agent_id, p_user_id, 'read');
    perform memex._enforce_rate_limit('search', p_agent_id);

    -- Tenants in the ANN index (memex.index_tenant; memex.maintenance moves tenants in
    -- once they pass settings.exact_scan_max_rows) take the ANN path, all others are
    -- scanned exactly.
    select not t.ann into v_exact
    from memex.tenants t where t.agent_id = p_agent_id and t.user_id = p_user_id;
    v_exact := coalesce(v_exact, true);

    if not v_exact then
        -- (the ANN path's depths: exact tenants use neither)
        v_depth := greatest(p_top_k, memex._setting('ann_candidates', '200')::integer);
        -- newest memories among the ANN candidates: only recency's weight makes them
        -- matter. Without alpha recency adds at most 25 %, so the newest matter no more
        -- than any other memory, except to the vector-only ranking, which bounds them all
        -- unread (memex._candidates_ann).
        v_recent := case when p_alpha = 1 or (p_alpha is null and not (p_mode = 'vector'
                                                                       and v_context = 0))
                         then v_depth
                         else greatest(v_depth,
                                       memex._setting('ann_recent_candidates', '5000')::integer)
                    end;
        -- The ANN index's session settings (hnsw.* or ivfflat.*, with iterative scans so
        -- the tenant filter does not starve the index), searching as deep as the nearest
        -- neighbours taken; restored below so callers' sessions are untouched.
        select array_agg(g.name), array_agg(g.value), array_agg(g.default_value)
        into v_gucs, v_values, v_defaults
        from memex._vector_index_settings(memex._ann_nearest(v_depth, v_terms)) g;
        for i in 1 .. coalesce(cardinality(v_gucs), 0) loop
            v_saved[i] := current_setting(v_gucs[i], true);
            perform set_config(v_gucs[i], v_values[i], true);
        end loop;
        -- a tenant without supersession links (no successor: memories_supersedes_idx,
        -- one empty probe) runs none of memex._candidates_ann's supersession steps; not
        -- with include_superseded, which shows retired memories (superseded
        -- with no successor: memex.retire_memories) that no successor lists
        if not coalesce(p_include_superseded, false)
           and not exists (select from memex.memories s
                       where s.agent_id = p_agent_id and s.user_id = p_user_id
                         and s.supersedes is not null) then
            v_shown := null;
        end if;
    end if;

    if p_mode = 'vector' and v_context = 0 then
        -- Pure vector ranking (mode 'vector' without context, the memex request): relevance
        -- is the similarity itself, so the
        -- text statistics and the context window are skipped. Same formula and order as
        -- the general query below (bench/RESULTS.md, "Scale benchmark": 2.1 -> 0.8 ms).
        -- An exact tenant without supersession links (one empty probe of
        -- memories_supersedes_idx, as memex._supersession_heads makes) skips that call
        -- (bench/RESULTS.md, "Per-request cost, second round").
        v_links := v_exact and exists (select from memex.memories s
                                       where s.agent_id = p_agent_id
                                         and s.user_id = p_user_id
                                         and s.supersedes is not null);
        if v_links then
            -- exact path: each head's best similarity among the memories it superseded,
            -- computed once, before the ranking (as a join's inner side it was re-sorted
            -- per memory; as a CTE of the ranking, its plan cost every search its start
            -- and end, ~25 us, links or not: bench/RESULTS.md, "Per-request cost, third
            -- round"); the ranking reads each memory's value off these arrays by position
            -- (array_position: no join whose inner side every search starts and rescans
            -- per memory, links or not)
            select array_agg(i.head), array_agg(i.similarity)
            into v_heads, v_inherited
            from (select h.head,
                         max(1 - (c.embedding operator(public.<=>) v_query)) as similarity
                  from memex._supersession_heads(p_agent_id, p_user_id, v_now, v_filters) h
                  join memex.memories c on c.id = h.id
                  group by h.head) i;
            if p_as_of is not null then
                -- as_of: each memory superseded after as_of with the best similarity of
                -- its later versions, recorded after it (memex._later_versions)
                select array_agg(l.id), array_agg(l.similarity)
                into v_later, v_later_similarity
                from (select v.id,
                             max(1 - (s.embedding operator(public.<=>) v_query)) as similarity
                      from memex._later_versions(p_agent_id, p_user_id, p_as_of,
                                                 p_embedding_model) v
                      join memex.memories s on s.id = v.later
                      group by v.id) l;
            end if;
        end if;
        -- the best v_pool hits, narrow (id, score, text), in search's order; then the
        -- near-duplicate rule on their texts and scores alone (memex._lowered_repeats)
        -- and the whole rows of the top k only, not all v_pool rows of 23 fields built
        -- for memex._duplicates_last to take apart again (bench/RESULTS.md, "Issue 39
        -- item 1, Postgres side (session 8)")
        select array_agg(t.id order by t.score desc, t.created_at desc, t.id),
               array_agg(t.created_at order by t.score desc, t.created_at desc, t.id),
               array_agg(t.similarity order by t.score desc, t.created_at desc, t.id),
               array_agg(t.recency order by t.score desc, t.created_at desc, t.id),
               array_agg(t.score order by t.score desc, t.created_at desc, t.id),
               array_agg(coalesce(t.content, c.content)
                         order by t.score desc, t.created_at desc, t.id)
        into v_ids, v_created, v_similarity, v_recency, v_scores, v_contents
        from (
        with top as (
            select r.*,
                   memex._score(r.similarity, r.recency, r.importance, p_alpha) as score
            from (
                select c.id, c.content, c.importance, c.created_at, c.similarity,
                       memex._recency(c.created_at, v_now, p_half_life_days) as recency
                from (
                    -- each memory with the best similarity of its own and of the
                    -- memories it superseded (memex._supersession_heads: the tenant's
                    -- links through their index, one empty probe without); a short text
                    -- rides along (a longer one, and the ANN path's, is read below by
                    -- primary key: the sort copies every row it is given)
                    select m.id,
                           case when pg_column_size(m.content) <= 256 then m.content end
                               as content,
                           memex._valid_importance(m.importance, m.valid_to, v_now, p_valid_at)
                               as importance,
                           m.created_at,
                           greatest(1 - (m.embedding operator(public.<=>) v_query),
                                    v_inherited[array_position(v_heads, m.id)],
                                    v_later_similarity[array_position(v_later, m.id)])
                               as similarity
                    -- the filters spelled out, not v_filters: inlined, each is then a
                    -- parameter of this generic plan, not a field read off a row per memory
                    from memex._filtered_memories(
                             p_agent_id, p_user_id, v_now, p_include_superseded,
                             memex._search_filters(p_memory_types, p_embedding_model,
                                                   p_metadata, p_include_archived, p_as_of,
                                                   p_valid_at, p_created_after,
                                                   p_created_before)) m
                    where v_exact
                    union all
                    select a.id, null, a.importance, a.created_at, a.similarity
                    from memex._candidates_ann(p_agent_id, p_user_id, v_query,
                                               v_terms, v_now, v_depth, v_recent, v_filters,
                                               p_top_k, p_alpha, p_half_life_days, 0,
                                               v_shown) a
                    where not v_exact
                ) c
                offset 0  -- evaluate similarity and recency once per row
            ) r
            order by score desc, r.created_at desc, r.id
            limit v_pool
        )
        select * from top) t
             -- the texts not carried: one primary-key lookup per row of the top hits, as
             -- below (with "limit v_pool" the generic plan assumed 100 rows and hashed
             -- them against a sequential scan of every tenant's memories: bench/RESULTS.md,
             -- "Per-request cost, second round")
             left join lateral (
                 select m.content from memex.memories m
                 where t.content is null and m.id = t.id offset 0
             ) c on true;
        v_lowered := memex._lowered_repeats(v_contents, v_scores);
        v_hits := array(
            select (m.id, m.agent_id, m.user_id, m.memory_type, m.content,
                    m.importance::double precision, m.metadata, m.created_at, m.expires_at,
                    v_similarity[p.o], null::double precision, v_similarity[p.o],
                    v_recency[p.o], p.score, m.source_ids, m.superseded_by, m.archived_at,
                    m.updated_at, m.embedding_model, m.valid_from, m.valid_to,
                    m.superseded_at, m.supersedes)::memex.search_hit
            from (select o, coalesce(v_lowered[o], v_scores[o]) as score
                  from generate_subscripts(v_ids, 1) o
                  order by 2 desc, v_created[o] desc, v_ids[o]
                  limit p_top_k) p
                 cross join lateral (
                     select m.* from memex.memories m where m.id = v_ids[p.o] offset 0
                 ) m
            order by p.score desc, v_created[p.o] desc, v_ids[p.o]);
    else
        v_hits := memex._duplicates_last(array(
        select h::memex.search_hit from (
        with candidates as (
            -- best_text_rank: the highest BM25 score among the candidates (the exact path
            -- has it from its matching memories; the ANN path takes it over its candidates)
            select c.* from memex._candidates_exact(p_agent_id, p_user_id, v_query,
                                                    v_terms, v_now, p_include_superseded,
                                                    v_filters) c
            where v_exact
            union all
            select c.*, max(c.text_rank) over () as best_text_rank
            from memex._candidates_ann(p_agent_id, p_user_id, v_query,
                                       v_terms, v_now, v_depth, v_recent, v_filters,
                                       p_neighbours => case when v_context > 0 then 2 else 0 end,
                                       p_include_superseded => v_shown) c
            where not v_exact
        ),
        normalised as (
            -- a query of one term (after stop words): its text match is one word that
            -- may be used in another sense ("Where do I live?" / "painting the living
            -- room", "What is my job?" / a friend's new job), and BM25 / best BM25 gives
            -- any memory holding it the full text half of the blend, above a fact worded
            -- apart from the question; so its text part counts as far as the memory is
            -- also near the query: whole within 0.9 of the best cosine among the
            -- candidates, below that times (cosine / (0.9 best cosine))^3 (bench/RESULTS.md,
            -- "A one-word match needs the vector's agreement"). Queries of two terms or
            -- more are unchanged (BM25 already weighs how many of their terms a memory holds)
            select c.id, c.importance, c.created_at, c.similarity, c.text_rank,
                   case p_mode
                       when 'vector' then c.similarity
                       when 'text'
                           then coalesce(c.text_rank / nullif(c.best_text_rank, 0), 0)
                       else v_weight * c.similarity
                            + (1 - v_weight)
                              * coalesce(c.text_rank / nullif(c.best_text_rank, 0), 0)
                              * case when v_one_term
                                     then coalesce(least(greatest(c.similarity, 0)
                                                         / nullif(0.9 * greatest(
                                                               max(c.similarity) over (), 0),
                                                                  0),
                                                         1) ^ 3, 1)
                                     else 1 end
                   end as own
            from candidates c
        ),
        lending as (
            -- what a memory lends its neighbours: a text stored many times ("Traffic on
            -- the way home was terrible.", said weekly) would otherwise lift the neighbours
            -- of every copy above a fact worded apart from the question; only its newest
            -- copy lends (copies: memories holding a query term with the same similarity
            -- and BM25 score, i.e. the same text embedded by the same model; without a
            -- term matched, equal similarity alone would also join distinct texts on one
            -- vector; bench/RESULTS.md, "Near-duplicates pushed down")
            select n.*,
                   case when n.similarity is null or coalesce(n.text_rank, 0) = 0
                             or row_number() over (partition by n.similarity, n.text_rank
                                                   order by n.created_at desc, n.id) = 1
                        then n.own else 0 end as lent
            from normalised n
        ),
        scored as (
            -- the window never costs a memory more than a fifth of its own relevance: an
            -- isolated strong match (no related neighbours) keeps 0.8 of it instead of
            -- 1 / (1 + 1.5 c) (0.57 at c 0.5), so it is not outranked by weaker matches
            -- that merely sit among others (bench/RESULTS.md, "Context never buries a
            -- strong match")
            select n.id, n.importance, n.similarity, n.text_rank, n.created_at,
                   greatest(
                       (n.own
                        + v_context * coalesce(greatest(lag(n.lent) over w, lead(n.lent) over w), 0)
                        + v_context / 2
                          * coalesce(greatest(lag(n.lent, 2) over w, lead(n.lent, 2) over w), 0))
                       / (1 + 1.5 * v_context),
                       n.own - 0.2 * abs(n.own)) as relevance,
                   memex._recency(n.created_at, v_now, p_half_life_days) as recency
            from lending n
            window w as (order by n.created_at, n.id)
        ),
        top as (
            select s.*, memex._score(s.relevance, s.recency, s.importance, p_alpha) as score
            from scored s
            order by score desc, s.created_at desc, s.id
            limit v_pool
        )
        select m.id, m.agent_id, m.user_id, m.memory_type, m.content, m.importance, m.metadata,
               m.created_at, m.expires_at, t.similarity, t.text_rank, t.relevance, t.recency,
               t.score, m.source_ids, m.superseded_by, m.archived_at, m.updated_at,
               m.embedding_model, m.valid_from, m.valid_to, m.superseded_at, m.supersedes
        from top t
             -- one primary-key lookup per row of the top k: for "limit p_top_k" the generic
             -- plan assumes 10 % of the candidates, and would hash a small table whole
             -- (a 1k-memory tenant: bench/RESULTS.md "Paragraph-sized memories"); offset 0
             -- keeps the lookup per row
             cross join lateral (
                 select m.id, m.agent_id, m.user_id, m.memory_type, m.content,
                        m.importance::double precision as importance, m.metadata,
                        m.created_at, m.expires_at, m.source_ids, m.superseded_by,
                        m.archived_at, m.updated_at, m.embedding_model, m.valid_from,
                        m.valid_to, m.superseded_at, m.supersedes
                 from memex.memories m where m.id = t.id offset 0
             ) m
        order by t.score desc, t.created_at desc, t.id) h), p_top_k);
    end if;

    for i in 1 .. coalesce(cardinality(v_gucs), 0) loop
        perform set_config(v_gucs[i], coalesce(v_saved[i], v_defaults[i]), true);
    end loop;
    if coalesce(p_include_superseded, false) then
        return query select * from memex._successors_first(v_hits, true);
    else
        -- (what memex._successors_first returns without applying: the hits in their
        -- order, without its call)
        return query
            select h.id, h.agent_id, h.user_id, h.memory_type, h.content, h.importance,
                   h.metadata, h.created_at, h.expires_at, h.similarity, h.text_rank,
                   h.relevance, h.recency, h.score, h.source_ids, h.superseded_by,
                   h.archived_at, h.updated_at, h.embedding_model, h.valid_from, h.valid_to,
                   h.superseded_at, h.supersedes
            from unnest(v_hits) with ordinality as h
            order by h.ordinality;
    end if;
end
$$;

comment on function memex.search(text, text, vector, integer, double precision,
                                 double precision, memex.memory_type[], text, text, text,
                                 timestamptz, double precision, jsonb, boolean, boolean,
                                 timestamptz, timestamptz, timestamptz, timestamptz) is
    'Rank a tenant''s memories: relevance with recency as a bounded tiebreaker, or'
    ' (alpha*relevance + (1-alpha)*recency) when alpha is given; times importance.';
