-- privileges: service
-- memex._record_failed_run: record a consolidation run of p_kind ('condense' or 'dream')
-- over tenant (p_agent_id, p_user_id) that failed with p_error. The ticks
-- (memex.consolidate_due, memex.dream_due) call it from the exception handler of a
-- tenant's run, after its work was rolled back, so that the failure is seen
-- (memex.dream_users, the runs API) and the tick goes on with the next tenant.
create or replace function memex._record_failed_run(
    p_agent_id text,
    p_user_id text,
    p_kind text,
    p_error text
)
returns memex.consolidation_runs
language sql volatile set search_path = pg_catalog, public, pg_temp
as $$
    insert into memex.consolidation_runs
        (agent_id, user_id, kind, status, actor, finished_at, error)
    values (p_agent_id, p_user_id, p_kind, 'failed', 'dream-agent', clock_timestamp(), p_error)
    returning *
$$;

comment on function memex._record_failed_run(text, text, text, text) is
    'Record a failed consolidation run (the tick goes on with the next tenant).';
