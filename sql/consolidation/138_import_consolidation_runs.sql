-- privileges: tenant
-- memex.import_consolidation_runs: restore exported consolidation runs (memex.export_history's
-- 'consolidation_run' records: every column but id and restored_by) as they were recorded.
-- A run of the same tenant, kind and started_at exists already: skipped, so an import can
-- be run again. Runs get new ids here, the next numbers of their agent's runs
-- (memex._history_id), in the order given; a restored condense run is linked to the
-- restore run that undid it (restored_by) again through their summary_id, whichever of
-- the two comes first, and the restore run's details.run names the run's new id. Other
-- details keep the ids of the database they were exported from. Actors are checked
-- (memex._authorize_import). Returns the number inserted. Only the operator or an admin
-- key of each record's tenant may import history. A security definer (owned by memex_owner:
-- row-level security still applies), as the consolidation functions are.
create or replace function memex.import_consolidation_runs(p_records jsonb)
returns integer
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_count integer;
begin
    perform memex._authorize_import(p_records, 'consolidation runs');
    insert into memex.consolidation_runs
        (agent_id, user_id, kind, status, actor, started_at, finished_at, memories_in,
         memories_out, files_in, files_out, files_touched, summary_id, error, details)
    select r.agent_id, r.user_id, r.kind, r.status, r.actor, r.started_at, r.finished_at,
           coalesce(r.memories_in, 0), coalesce(r.memories_out, 0), coalesce(r.files_in, 0),
           coalesce(r.files_out, 0), coalesce(r.files_touched, 0), r.summary_id, r.error,
           coalesce(r.details, '{}')
    from (  -- a run given twice: the first one; then in the order given (the new ids')
        select distinct on (x.agent_id, x.user_id, x.kind, x.started_at) x.*, e.ord
        from jsonb_array_elements(p_records) with ordinality e(value, ord),
             jsonb_populate_record(null::memex.consolidation_runs, e.value) x
        order by x.agent_id, x.user_id, x.kind, x.started_at, e.ord
    ) r
    where not exists (
        select from memex.consolidation_runs c
        where c.agent_id = r.agent_id and c.user_id = r.user_id and c.kind = r.kind
          and c.started_at = r.started_at)
    order by r.ord;
    get diagnostics v_count = row_count;
    -- a restored condense run and the restore that undid it share the summary
    update memex.consolidation_runs c set restored_by = s.id
    from memex.consolidation_runs s
    where c.status = 'restored' and c.restored_by is null and c.kind = 'condense'
      and s.kind = 'restore' and s.summary_id = c.summary_id
      and s.agent_id = c.agent_id and s.user_id = c.user_id
      and (c.agent_id, c.user_id) in (
          select distinct r ->> 'agent_id', r ->> 'user_id'
          from jsonb_array_elements(p_records) r);
    update memex.consolidation_runs s set details = jsonb_set(s.details, '{run}', to_jsonb(c.id))
    from memex.consolidation_runs c
    where c.restored_by = s.id and c.agent_id = s.agent_id and c.user_id = s.user_id
      and s.kind = 'restore' and s.details -> 'run' is distinct from to_jsonb(c.id)
      and (c.agent_id, c.user_id) in (
          select distinct r ->> 'agent_id', r ->> 'user_id'
          from jsonb_array_elements(p_records) r);
    return v_count;
end
$$;

comment on function memex.import_consolidation_runs(jsonb) is
    'Insert exported consolidation runs as recorded (admin); existing runs are skipped.';
