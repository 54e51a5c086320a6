-- privileges: service
-- memex.dream_due: one tick of dreaming over files, for every tenant, as pg_cron runs it or
-- the service's scheduler where the server has no pg_cron. Nothing happens unless
-- dream_config.enabled. The tenants that are due (memex._dream_due_tenants: at most
-- dream_config.concurrency, longest-waiting first; memex.dream_tenant checks again) are
-- taken within dream_config.write_budget rewritten files for the whole tick. A tenant
-- whose run fails is recorded as a failed run (its work rolled back) and the tick goes on. Returns
-- the runs of the tenants it read (those that found their files tidy too, with
-- files_touched 0), the dry runs (p_dry_run: nothing is written) and the failed ones; an
-- empty result means no tenant was due, and nothing was written. p_edits: edits proposed over
-- memex.dream_plan (see memex.dream_tenant), each with its tenant's agent_id and user_id;
-- each tenant's run gets its own.
-- The tick yields to clients' writes: it waits for a lock at most 200 ms (its own
-- lock_timeout) and then skips that tenant (its run undone, not recorded as failed: the
-- next tick dreams it), and after each done run it stops when another session waits for
-- a lock it holds (memex._others_wait), so that it commits.
create or replace function memex.dream_due(
    p_dry_run boolean default false,
    p_now timestamptz default null,
    p_edits jsonb default null
)
returns setof memex.consolidation_runs
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
set lock_timeout = '200ms'  -- a job yields to writers (see above)
as $$
declare
    v_now    timestamptz := coalesce(p_now, now());
    v_config jsonb := memex.dream_config();
    v_budget integer := (v_config ->> 'write_budget')::integer;
    v_tenant record;
    v_run    memex.consolidation_runs;
    v_error  text;
begin
    perform memex._check_dream_edits(p_edits);
    perform memex._authorize(null, null, 'admin');  -- every tenant: operator, pg_cron, jobs
    if not (v_config ->> 'enabled')::boolean then
        return;
    end if;
    for v_tenant in select * from memex._dream_due_tenants(v_now, v_config)
    loop
        exit when v_budget <= 0;
        begin
            v_run := memex.dream_tenant(v_tenant.agent_id, v_tenant.user_id,
                                        p_dry_run => p_dry_run, p_now => p_now,
                                        p_budget => v_budget, p_edits => (
                select jsonb_agg(e) from jsonb_array_elements(p_edits) e
                where e ->> 'agent_id' = v_tenant.agent_id
                  and e ->> 'user_id' = v_tenant.user_id));
        exception when lock_not_available then
            continue;  -- a client is writing the tenant: it goes first, the next tick dreams
        when others then
            get stacked diagnostics v_error = message_text;
            v_run := memex._record_failed_run(v_tenant.agent_id, v_tenant.user_id, 'dream',
                                              v_error);
        end;
        continue when v_run.status is null or v_run.status = 'nothing';  -- locked or tidy
        return next v_run;
        v_budget := v_budget - v_run.files_out;
        if v_run.status = 'done' and memex._others_wait() then
            return;  -- a writer waits for this tick's locks: commit what is done
        end if;
    end loop;
end
$$;

comment on function memex.dream_due(boolean, timestamptz, jsonb) is
    'One dreaming tick: tidy the files of every due tenant (within the write budget); the runs.';
