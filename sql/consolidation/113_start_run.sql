-- privileges: service
-- memex._start_run: the start of a condense or dream run that writes: the rest of the
-- transaction is written as dream-agent for the caller (memex._delegate), and the run is
-- recorded as 'running' (actor memex._actor(): dream-agent, on behalf of the caller),
-- started at p_started_at. Returns the run's id (memex._history_id numbers it); the caller
-- finishes the row. The one start of memex.consolidate_tenant and memex.dream_tenant
-- (security definers, which authorize their caller first).
create or replace function memex._start_run(
    p_agent_id text, p_user_id text, p_kind text, p_started_at timestamptz
)
returns bigint
language plpgsql volatile set search_path = pg_catalog, pg_temp
as $$
declare
    v_id bigint;
begin
    perform memex._delegate('dream-agent');
    insert into memex.consolidation_runs (agent_id, user_id, kind, status, actor, started_at)
    values (p_agent_id, p_user_id, p_kind, 'running', memex._actor(), p_started_at)
    returning id into v_id;
    return v_id;
end
$$;

comment on function memex._start_run(text, text, text, timestamptz) is
    'Write the rest of the transaction as dream-agent and record a running run; its id.';
