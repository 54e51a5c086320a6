-- memex.tenant_stats: the whole database in one row, for `memexdb status`: tenants,
-- their memories (memex.tenants.memory_count), how many tenants are in the ANN index and
-- how many have grown past settings.exact_scan_max_rows and wait for memex.maintenance()
-- to move them there. Operator only (memex._authorize(null, null, 'admin')).
-- privileges: service
create or replace function memex.tenant_stats()
returns table (tenants bigint, memories bigint, indexed bigint, waiting bigint)
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
begin
    perform memex._authorize(null, null, 'admin');
    return query
    select count(*),
           coalesce(sum(t.memory_count), 0)::bigint,
           count(*) filter (where t.ann),
           count(*) filter (where not t.ann and t.memory_count
                            > memex._setting('exact_scan_max_rows', '10000')::bigint)
    from memex.tenants t;
end
$$;

comment on function memex.tenant_stats() is
    'Tenants, memories, tenants in the ANN index and tenants waiting for it; operator only.';
