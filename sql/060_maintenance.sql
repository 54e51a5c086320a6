-- memex.maintenance: periodic housekeeping, run every minute by pg_cron where the server
-- has it and otherwise by the memexdb service's own scheduler. Deletes memories past
-- their expires_at and rate-limit rows whose windows have passed. Safe to run anywhere,
-- any number of times, concurrently.
create or replace function memex.maintenance()
returns memex.maintenance_result
language plpgsql
volatile
set search_path = pg_catalog, public, pg_temp
as $$
declare
    v_result memex.maintenance_result;
begin
    delete from memex.memories m where m.expires_at <= now();
    get diagnostics v_result.expired_memories_deleted = row_count;
    delete from memex.rate_limits r where r.expires_at <= clock_timestamp();
    get diagnostics v_result.rate_limit_rows_deleted = row_count;
    return v_result;
end
$$;

comment on function memex.maintenance() is
    'Delete expired memories and stale rate-limit rows; returns how many of each.';
