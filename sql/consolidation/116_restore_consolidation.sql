-- privileges: tenant
-- memex.restore_consolidation: undo a condense run: its sources are live again (no
-- longer archived or superseded) and its summary is archived in their place (kept, like
-- everything consolidation touches). The run's status becomes restored, and the restore
-- itself is a run (kind restore, details.run) that is returned. MX404 for no such run of
-- a tenant the caller may write; MX409 if the run is not a completed condense run.
-- The restore sticks (issue 36): the sources' restored_at is set, and memex.consolidate_tenant
-- leaves them until a memory newer than the restore arrives for the tenant (or a forced
-- run). Each source and the summary get a revision (memex._memory_revision).
-- A run id is a number within its agent's history (memex._history_id): the run is the
-- one of that number the caller sees (row-level security: an agent's key sees its own
-- agent's runs only, so another agent's run of the same number is never it), of agent
-- p_agent_id when given. A caller of every agent who sees runs of that number in several
-- agents and names none gets MX422 (field agent_id).
create or replace function memex.restore_consolidation(
    p_run_id bigint, p_agent_id text default null
)
returns memex.consolidation_runs
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_run      memex.consolidation_runs;
    v_restore  memex.consolidation_runs;
    v_restored integer;
    v_agents   integer;
begin
    select count(*) into v_agents from memex.consolidation_runs r
    where r.id = p_run_id and (p_agent_id is null or r.agent_id = p_agent_id);
    if v_agents > 1 then
        perform memex._invalid('agent_id', format(
            'runs numbered %s exist in %s agents: name the run''s agent', p_run_id, v_agents));
    end if;
    select * into v_run from memex.consolidation_runs r
    where r.id = p_run_id and (p_agent_id is null or r.agent_id = p_agent_id);
    -- another tenant's run looks like no run at all (ids leak nothing across tenants)
    begin
        if v_run.id is not null then
            perform memex._authorize(v_run.agent_id, v_run.user_id, 'read');
        end if;
    exception when insufficient_privilege then
        v_run.id := null;
    end;
    if v_run.id is null then
        raise exception 'consolidation run % not found', p_run_id using errcode = 'MX404';
    end if;
    perform memex._authorize(v_run.agent_id, v_run.user_id, 'write');
    perform pg_advisory_xact_lock(memex._lock_key(
        'consolidate', jsonb_build_array(v_run.agent_id, v_run.user_id)::text));
    select * into v_run from memex.consolidation_runs r
    where r.agent_id = v_run.agent_id and r.id = p_run_id for update;
    if v_run.kind <> 'condense' or v_run.status <> 'done' then
        raise exception 'run % is a % run with status %: only done condense runs restore',
                        p_run_id, v_run.kind, v_run.status
            using errcode = 'MX409';
    end if;
    update memex.memories m set archived_at = null, superseded_by = null,
                                restored_at = clock_timestamp()
    -- its sources, by primary key (superseded_by is not indexed: revision 0036), those
    -- still linked to it
    where m.id = any ((select s.source_ids from memex.memories s
                       where s.id = v_run.summary_id)::uuid[])
      and m.superseded_by = v_run.summary_id
      and m.agent_id = v_run.agent_id and m.user_id = v_run.user_id;
    get diagnostics v_restored = row_count;
    update memex.memories m set archived_at = now()
    where m.id = v_run.summary_id and m.archived_at is null;
    insert into memex.consolidation_runs (agent_id, user_id, kind, status, actor, finished_at,
                                          memories_in, memories_out, summary_id, details)
    values (v_run.agent_id, v_run.user_id, 'restore', 'done', memex._actor(),
            clock_timestamp(), 1, v_restored, v_run.summary_id,
            jsonb_build_object('run', v_run.id))
    returning * into v_restore;
    update memex.consolidation_runs r set status = 'restored', restored_by = v_restore.id
    where r.agent_id = v_run.agent_id and r.id = v_run.id;
    return v_restore;
end
$$;

comment on function memex.restore_consolidation(bigint, text) is
    'Undo a condense run: its sources live again, its summary archived; the restore run.';
