-- privileges: service
-- memex.consolidate_due_tick: memex.consolidate_due's tick, committing after every batch:
-- what pg_cron runs (`call memex.consolidate_due_tick()`, registered by `memexdb
-- schedule`). The same tenants in the same order (memex._consolidate_due_tenants: not
-- paused, more memories than the threshold, largest first, at most
-- dream_config.concurrency), each condensed batch after
-- batch while it stays due, within dream_config.write_budget summaries; a tenant whose run
-- fails becomes a failed run and the tick goes on. After each batch (a summary, or a
-- failed run) it commits, so the locks a batch took (the tenant's rows, its consolidation
-- lock, its history counters) are held for that batch only: a store into a tenant being
-- condensed waits for one batch at most, never for the whole tick. memex.consolidate_due
-- (one transaction, the runs returned) stays for callers who want the runs back.
-- A procedure, run by the role pg_cron runs as (the operator who scheduled it; admin of
-- every agent); called inside a transaction block (not as pg_cron calls it) its first
-- commit fails. It has no `set search_path` (a procedure with one may not commit) and is
-- no security definer (neither may one that commits): it runs with its caller's rights,
-- and every name in it is schema-qualified.
create or replace procedure memex.consolidate_due_tick(
    p_dry_run boolean default false,
    p_now timestamptz default null
)
language plpgsql
as $$
declare
    v_config  jsonb := memex.dream_config();
    v_budget  integer := (v_config ->> 'write_budget')::integer;
    v_agents  text[];
    v_users   text[];
    v_run     memex.consolidation_runs;
    v_error   text;
begin
    perform memex._authorize(null, null, 'admin');  -- every tenant: the operator, pg_cron
    if not (v_config ->> 'enabled')::boolean then
        return;
    end if;
    select pg_catalog.array_agg(d.agent_id order by d.n),
           pg_catalog.array_agg(d.user_id order by d.n)
    into v_agents, v_users
    from memex._consolidate_due_tenants(v_config) with ordinality d(agent_id, user_id, n);
    commit;  -- the list read, nothing held while the batches run
    for i in 1 .. coalesce(pg_catalog.cardinality(v_agents), 0) loop
        exit when v_budget <= 0;
        loop
            begin
                v_run := memex.consolidate_tenant(v_agents[i], v_users[i],
                                                  p_dry_run => p_dry_run, p_now => p_now);
            exception when others then
                get stacked diagnostics v_error = message_text;
                v_run := memex._record_failed_run(v_agents[i], v_users[i], 'condense',
                                                  v_error);
            end;
            commit;  -- this batch's locks end here
            exit when v_run.status is null or v_run.status = 'nothing';  -- locked, not due
            exit when v_run.status <> 'done';  -- failed, or a dry run: one per tenant
            v_budget := v_budget - 1;
            exit when v_budget <= 0;
        end loop;
    end loop;
end
$$;

comment on procedure memex.consolidate_due_tick(boolean, timestamptz) is
    'One consolidation tick (as memex.consolidate_due) that commits after every batch.';
