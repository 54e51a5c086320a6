-- privileges: tenant-helper
-- memex._ann_newest_rows: for memex._candidates_ann, the p_limit newest live memories of
-- the tenant (memex._filtered_memories, p_include_superseded null as false), each with
-- what the ranking reads: its importance (memex._valid_importance), similarity to the
-- query, tsvector and length.
-- A function of its own to be planned for each call (force_custom_plan): reading the
-- newest through memories_tenant_recent_idx, in order, is right for a big tenant, and a
-- cached generic plan, which assumes an average-sized tenant, may instead sort the whole
-- tenant (as memex._ann_nearest_rows); memex._candidates_ann keeps a generic plan.
create or replace function memex._ann_newest_rows(
    p_agent_id text,
    p_user_id text,
    p_query_embedding public.halfvec,
    p_now timestamptz,
    p_include_superseded boolean,
    p_filters memex.search_filters,
    p_limit integer
)
returns table (id uuid, importance double precision, created_at timestamptz,
               similarity double precision, tsv tsvector, tsv_length integer)
language sql stable set search_path = pg_catalog, public, pg_temp
set plan_cache_mode = force_custom_plan
as $$
    select m.id, memex._valid_importance(m.importance, m.valid_to, p_now,
                                         (p_filters).valid_at),
           m.created_at, 1 - (m.embedding <=> p_query_embedding), m.tsv, m.tsv_length
    from memex._filtered_memories(p_agent_id, p_user_id, p_now, p_include_superseded,
                                  p_filters) m
    order by m.created_at desc
    limit p_limit
$$;

comment on function memex._ann_newest_rows(text, text, public.halfvec, timestamptz, boolean,
                                           memex.search_filters, integer) is
    'The newest live memories of a tenant, scored inputs (memex._candidates_ann''s newest'
    ' step, planned per call).';
