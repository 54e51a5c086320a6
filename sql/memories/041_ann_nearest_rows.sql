-- privileges: tenant-helper
-- memex._ann_nearest_rows: for memex._candidates_ann, the p_limit memories of the tenant
-- nearest to the query in the ANN index (tenants.ann; HNSW or ivfflat, memex.search sets
-- the index's session settings, with iterative scans so the tenant filter does not starve
-- it), among memex._filtered_memories' with the superseded ones hidden at the moment
-- (hidden: they rank their successors, memex._candidates_ann's contributors), each with
-- what the ranking reads: its importance (memex._valid_importance), similarity, tsvector
-- and successor (superseded_by of a superseded one). p_include_superseded null says the
-- caller found no supersession link: superseded memories are left out, as with false.
-- A function of its own to be planned for each call (force_custom_plan): the choice of the
-- vector index depends on the tenant's size, which a cached generic plan does not know
-- (it assumes an average-sized tenant, with 1,000 tenants ~0.1 % of the rows, and sorts the
-- whole tenant by distance instead: ~0.5-1.3 s instead of ~10 ms at 200,000 memories,
-- bench/RESULTS.md). A small statement, cheap to plan; memex._candidates_ann, which calls
-- it, keeps a generic plan (bench/RESULTS.md, "The default request's plan, cached").
create or replace function memex._ann_nearest_rows(
    p_agent_id text,
    p_user_id text,
    p_query_embedding public.halfvec,
    p_now timestamptz,
    p_include_superseded boolean,
    p_filters memex.search_filters,
    p_limit integer
)
returns table (id uuid, importance double precision, created_at timestamptz,
               similarity double precision, tsv tsvector, tsv_length integer,
               hidden boolean, successor uuid)
language sql stable set search_path = pg_catalog, public, pg_temp
set plan_cache_mode = force_custom_plan
as $$
    select m.id, memex._valid_importance(m.importance, m.valid_to, p_now,
                                         (p_filters).valid_at),
           m.created_at, 1 - (m.embedding <=> p_query_embedding), m.tsv, m.tsv_length,
           not coalesce(p_include_superseded or m.superseded_at is null
                        or m.superseded_at > (p_filters).as_of,
                        false),  -- null as_of
           case when m.superseded_at is not null then m.superseded_by end
    from memex._filtered_memories(p_agent_id, p_user_id, p_now,
                                  p_include_superseded is not null,  -- null: no link
                                  p_filters) m
    where m.ann  -- implies the ANN index's predicate, so the planner may use it
      and p_query_embedding is not null
    order by m.embedding <=> p_query_embedding
    limit p_limit
$$;

comment on function memex._ann_nearest_rows(text, text, public.halfvec, timestamptz, boolean,
                                            memex.search_filters, integer) is
    'The nearest memories of a tenant in the ANN index, superseded ones flagged hidden'
    ' (memex._candidates_ann''s nearest step, planned per call).';
