-- privileges: service
-- memex.metrics_snapshot: the database's figures for the service's GET /metrics, read at
-- scrape time (so runs made by pg_cron count too): consolidation runs by kind and status,
-- the memories condensed by condense runs that are done, memories waiting in the embed queue, and the tenants (and their memories) ranked
-- through the ANN index. One row per figure: (metric, kind, status, value); kind and
-- status are null except for 'consolidation_runs'. Cheap: two small tables and the
-- tenants table, no scan of memories; a lock held by a migration makes it fail fast
-- (lock_timeout) rather than hang the scrape. Operator only.
create or replace function memex.metrics_snapshot()
returns table (metric text, kind text, status text, value bigint)
language plpgsql stable set search_path = pg_catalog, pg_temp
set lock_timeout = '500ms'
as $$
begin
    perform memex._authorize(null, null, 'admin');
    return query
    select 'consolidation_runs', r.kind, r.status, count(*)
    from memex.consolidation_runs r
    group by r.kind, r.status
    union all
    select 'memories_condensed', null, null, coalesce(sum(r.memories_in), 0)::bigint
    from memex.consolidation_runs r where r.kind = 'condense' and r.status = 'done'
    union all
    select 'embed_queue_depth', null, null, count(*) from memex.embed_queue
    union all
    select 'ann_index_tenants', null, null, count(*) from memex.tenants t where t.ann
    union all
    select 'ann_index_memories', null, null, coalesce(sum(t.memory_count), 0)::bigint
    from memex.tenants t where t.ann;
end
$$;

comment on function memex.metrics_snapshot() is
    'Scrape-time figures for GET /metrics: runs by kind and status, embed queue, ANN index.';
