-- privileges: tenant
-- memex.import_access_log: restore exported access-log entries (memex.export_history's
-- 'access' records: agent_id, user_id, actor, operation, target, at, details) as they
-- were recorded. An entry of the same tenant, time, actor, operation and target exists
-- already: skipped (entries are stamped with clock_timestamp(), so that is the same
-- entry), so an import can be run again. Actors are checked (memex._authorize_import).
-- Entries older than settings.access_log_retention_days are inserted too, and pruned by
-- the next memex.maintenance() as live ones are (docs/operations.md; an import's answer
-- counts them, access_log_expiring). Returns the number inserted. Only the operator
-- or an admin key of each record's tenant may import it (a write key cannot forge an
-- access event). A security definer (owned by memex_owner: row-level security still
-- applies), as memex._log_access is.
create or replace function memex.import_access_log(p_records jsonb)
returns integer
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_count integer;
begin
    perform memex._authorize_import(p_records, 'access-log entries');
    insert into memex.access_log (agent_id, user_id, actor, operation, target, at, details)
    select r.agent_id, r.user_id, r.actor, r.operation, r.target, r.at,
           coalesce(r.details, '{}')
    from (  -- an entry given twice: the first one; then in the order given
        select distinct on (x.agent_id, x.user_id, x.at, x.actor, x.operation, x.target)
               x.*, e.ord
        from jsonb_array_elements(p_records) with ordinality e(value, ord),
             jsonb_populate_record(null::memex.access_log, e.value) x
        order by x.agent_id, x.user_id, x.at, x.actor, x.operation, x.target, e.ord
    ) r
    where not exists (
        select from memex.access_log a
        where a.agent_id = r.agent_id and a.user_id = r.user_id and a.at = r.at
          and a.actor = r.actor and a.operation = r.operation
          and a.target is not distinct from r.target)
    order by r.ord;
    get diagnostics v_count = row_count;
    return v_count;
end
$$;

comment on function memex.import_access_log(jsonb) is
    'Insert exported access-log entries as recorded (admin); existing ones are skipped.';
