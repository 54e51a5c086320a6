-- privileges: service
-- memex.consolidate_due: one consolidation tick over every tenant, as pg_cron runs it
-- (`memexdb schedule`) or the service's scheduler where the server has no pg_cron.
-- Nothing happens unless dream_config.enabled. Tenants that may be due
-- (memex._consolidate_due_tenants: not paused, more memories than the threshold;
-- memex.consolidate_tenant decides exactly) are taken largest first, at most
-- dream_config.concurrency of them; each is condensed batch after
-- batch while it stays due, within dream_config.write_budget summaries for the whole
-- tick. A tenant whose run fails is recorded as a failed run (its work rolled back) and
-- the tick goes on. The tick yields to clients' writes: a run skips a tenant being
-- written (memex.consolidate_tenant), and after each summary, when another session waits
-- for a lock the tick holds (memex._others_wait: a store into a tenant it condensed), the
-- tick ends there so that it commits; the next tick goes on. Returns the runs (dry runs with p_dry_run: nothing is written); an
-- empty result means there was nothing to do, and nothing was written.
create or replace function memex.consolidate_due(
    p_dry_run boolean default false,
    p_now timestamptz default null
)
returns setof memex.consolidation_runs
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_config jsonb := memex.dream_config();
    v_budget integer := (v_config ->> 'write_budget')::integer;
    v_tenant record;
    v_run    memex.consolidation_runs;
    v_error  text;
begin
    perform memex._authorize(null, null, 'admin');  -- every tenant: operator, pg_cron, jobs
    if not (v_config ->> 'enabled')::boolean then
        return;
    end if;
    for v_tenant in select * from memex._consolidate_due_tenants(v_config)
    loop
        exit when v_budget <= 0;
        loop
            begin
                v_run := memex.consolidate_tenant(v_tenant.agent_id, v_tenant.user_id,
                                                  p_dry_run => p_dry_run, p_now => p_now);
            exception when others then
                get stacked diagnostics v_error = message_text;
                v_run := memex._record_failed_run(v_tenant.agent_id, v_tenant.user_id,
                                                  'condense', v_error);
            end;
            exit when v_run.status is null or v_run.status = 'nothing';  -- locked or not due
            return next v_run;
            exit when v_run.status <> 'done';  -- failed, or a dry run: one per tenant
            v_budget := v_budget - 1;
            exit when v_budget <= 0;
            if memex._others_wait() then
                return;  -- a writer waits for this tick's locks: commit what is done
            end if;
        end loop;
    end loop;
end
$$;

comment on function memex.consolidate_due(boolean, timestamptz) is
    'One consolidation tick: condense every due tenant (within the write budget); the runs.';
