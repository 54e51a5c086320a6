-- privileges: tenant-helper
-- memex._ann_recent_entries: for memex._candidates_ann's vector-only ranking, the p_limit
-- newest entries of the tenant's memories_tenant_recent_idx (agent_id, user_id,
-- created_at desc, id desc, including importance: revisions 0012, 0022), read without the
-- table (an index-only scan): id, created_at and the stored importance, whatever the
-- memory's state (the caller drops those it must not rank when it reads them).
-- A function of its own to be planned for each call (force_custom_plan): a cached generic
-- plan assumes an average-sized tenant and may sort the whole tenant instead of reading
-- the index in order (as memex._ann_nearest_rows); memex._candidates_ann keeps a generic
-- plan.
create or replace function memex._ann_recent_entries(
    p_agent_id text,
    p_user_id text,
    p_limit integer
)
returns table (id uuid, created_at timestamptz, importance double precision)
language sql stable set search_path = pg_catalog, public, pg_temp
set plan_cache_mode = force_custom_plan
as $$
    select r.id, r.created_at, r.importance
    from memex.memories r
    where r.agent_id = p_agent_id and r.user_id = p_user_id
    order by r.created_at desc
    limit p_limit
$$;

comment on function memex._ann_recent_entries(text, text, integer) is
    'The newest index entries of a tenant (id, created_at, importance), without the table'
    ' (memex._candidates_ann''s vector-only bound, planned per call).';
