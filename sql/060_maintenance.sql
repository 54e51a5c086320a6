-- memex.maintenance: periodic housekeeping, run every minute by pg_cron where the server
-- has it and otherwise by the memexdb service's own scheduler. Deletes memories past
-- their expires_at and rate-limit rows whose windows have passed, and moves tenants that
-- have grown past settings.exact_scan_max_rows into the ANN index (memex.index_tenant),
-- largest first, for up to ~10 s per call (at least one tenant), so that one call
-- never holds tenants' inserts for long. Safe to run anywhere, any number of times,
-- concurrently (a tenant locked by another call is skipped).
create or replace function memex.maintenance()
returns memex.maintenance_result
language plpgsql
volatile
set search_path = pg_catalog, public, pg_temp
as $$
declare
    v_result  memex.maintenance_result;
    v_started timestamptz := clock_timestamp();
    v_tenant  record;
begin
    delete from memex.memories m where m.expires_at <= now();
    get diagnostics v_result.expired_memories_deleted = row_count;
    delete from memex.rate_limits r where r.expires_at <= clock_timestamp();
    get diagnostics v_result.rate_limit_rows_deleted = row_count;

    v_result.tenants_indexed := 0;
    for v_tenant in
        select t.agent_id, t.user_id from memex.tenants t
        where not t.ann
          and t.memory_count > memex._setting('exact_scan_max_rows', '10000')::bigint
        order by t.memory_count desc
        for update skip locked
    loop
        exit when v_result.tenants_indexed > 0
                  and clock_timestamp() - v_started > interval '10 seconds';
        perform memex.index_tenant(v_tenant.agent_id, v_tenant.user_id);
        v_result.tenants_indexed := v_result.tenants_indexed + 1;
    end loop;
    return v_result;
end
$$;

comment on function memex.maintenance() is
    'Delete expired memories and stale rate-limit rows, move grown tenants into the ANN index.';
