-- privileges: service
-- memex.maintenance: periodic housekeeping, run every minute by pg_cron where the server
-- has it and otherwise by the memexdb service's own scheduler. Deletes memories past
-- their expires_at, rate-limit rows whose windows have passed (counters, and expired
-- reservations of memex.reserve_rate_limit: both in rate_limit_rows_deleted), access-log
-- entries older than settings.access_log_retention_days (default 90), and moves tenants that
-- have grown past settings.exact_scan_max_rows into the ANN index, largest first, in
-- steps of settings.index_batch_rows (memex._index_tenant_step) for up to ~10 s per
-- call; a large tenant carries on in the next call. A call that deleted expired memories
-- returns right after the deletes (they hold their tenants' counters, which stores take:
-- no store waits for the indexing); the next call indexes. The step that finishes a tenant
-- locks its row (its inserts wait) until this call commits, so the call returns right
-- after it: at most one tenant per call. A call that moved anything tells a scheduler to
-- call again soon. Safe to run anywhere, any number of times, concurrently (a tenant
-- another call is moving is skipped).
create or replace function memex.maintenance()
returns memex.maintenance_result
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_result  memex.maintenance_result;
    v_started timestamptz := clock_timestamp();
    v_batch   integer := greatest(memex._setting('index_batch_rows', '1000')::integer, 1);
    v_tenant  record;
    v_step    record;
    v_expired bigint;
begin
    perform memex._authorize(null, null, 'admin');  -- every tenant: operator, pg_cron, jobs
    delete from memex.memories m where m.expires_at <= now();
    get diagnostics v_result.expired_memories_deleted = row_count;
    delete from memex.rate_limits r where r.expires_at <= clock_timestamp();
    get diagnostics v_result.rate_limit_rows_deleted = row_count;
    delete from memex.rate_limit_reservations r where r.expires_at <= clock_timestamp();
    get diagnostics v_expired = row_count;
    v_result.rate_limit_rows_deleted := v_result.rate_limit_rows_deleted + v_expired;
    delete from memex.access_log l
    where l.at < now() - make_interval(
        days => memex._setting('access_log_retention_days', '90')::integer);
    get diagnostics v_result.access_log_rows_deleted = row_count;

    v_result.tenants_indexed := 0;
    v_result.memories_indexed := 0;
    if v_result.expired_memories_deleted > 0 then
        -- the deletes hold their tenants' counters (memex.tenants rows) until commit: a
        -- store into those tenants must not wait for ~10 s of indexing as well
        return v_result;
    end if;
    for v_tenant in
        select t.agent_id, t.user_id from memex.tenants t
        where not t.ann
          and t.memory_count > memex._setting('exact_scan_max_rows', '10000')::bigint
        order by t.memory_count desc
    loop
        -- not a row lock on the tenant: that would hold its inserts for the whole call
        continue when not pg_try_advisory_xact_lock(memex._lock_key(
            'index_tenant', jsonb_build_array(v_tenant.agent_id, v_tenant.user_id)::text));
        loop
            v_step := memex._index_tenant_step(v_tenant.agent_id, v_tenant.user_id, v_batch);
            v_result.memories_indexed := v_result.memories_indexed + v_step.moved;
            if v_step.finished then
                v_result.tenants_indexed := 1;
                return v_result;
            end if;
            exit when clock_timestamp() - v_started > interval '10 seconds';
        end loop;
        exit when clock_timestamp() - v_started > interval '10 seconds';
    end loop;
    return v_result;
end
$$;

comment on function memex.maintenance() is
    'Delete expired memories, stale rate-limit rows and old access-log entries, move grown tenants into the ANN index.';
