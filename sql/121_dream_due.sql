-- memex.dream_due: one tick of dreaming over files, for every tenant, as pg_cron runs it or
-- the service's scheduler where the server has no pg_cron. Nothing happens unless
-- dream_config.enabled. The tenants that are due (not paused, a file that dreams read
-- written since their last dream by someone other than dream-agent, nothing written for
-- grace_minutes: memex.dream_tenant checks again) are taken longest-waiting first (never
-- dreamed, then the oldest last_dreamed_at), at most dream_config.concurrency of them,
-- within dream_config.write_budget rewritten files for the whole tick. A tenant whose run
-- fails is recorded as a failed run (its work rolled back) and the tick goes on. Returns
-- the runs that rewrote files, the dry runs (p_dry_run: nothing is written) and the failed
-- ones; an empty result means there was nothing to tidy, and nothing was written but the
-- last_dreamed_at of tenants read and found tidy.
create or replace function memex.dream_due(
    p_dry_run boolean default false,
    p_now timestamptz default null
)
returns setof memex.consolidation_runs
language plpgsql
volatile
security definer
set search_path = pg_catalog, public, pg_temp
as $$
declare
    v_now    timestamptz := coalesce(p_now, now());
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
    for v_tenant in
        select t.agent_id, t.user_id from memex.tenants t
        where not t.dream_paused
          and exists (select from memex.memories f
                      where f.agent_id = t.agent_id and f.user_id = t.user_id
                        and f.path is not null and memex._dream_reads(f.path)
                        and f.actor is distinct from 'dream-agent'
                        and (t.last_dreamed_at is null or f.updated_at > t.last_dreamed_at))
          and not exists (select from memex.memories m
                          where m.agent_id = t.agent_id and m.user_id = t.user_id
                            and m.actor is distinct from 'dream-agent'
                            and m.updated_at > v_now - make_interval(
                                mins => (v_config ->> 'grace_minutes')::integer))
        order by t.last_dreamed_at nulls first, t.agent_id, t.user_id
        limit (v_config ->> 'concurrency')::integer
    loop
        exit when v_budget <= 0;
        begin
            v_run := memex.dream_tenant(v_tenant.agent_id, v_tenant.user_id,
                                        p_dry_run => p_dry_run, p_now => p_now,
                                        p_budget => v_budget);
        exception when others then
            get stacked diagnostics v_error = message_text;
            insert into memex.consolidation_runs
                (agent_id, user_id, kind, status, actor, finished_at, error)
            values (v_tenant.agent_id, v_tenant.user_id, 'dream', 'failed', 'dream-agent',
                    clock_timestamp(), v_error)
            returning * into v_run;
        end;
        continue when v_run.status is null or v_run.status = 'nothing';  -- locked or tidy
        return next v_run;
        v_budget := v_budget - v_run.files_out;
    end loop;
end
$$;

comment on function memex.dream_due(boolean, timestamptz) is
    'One dreaming tick: tidy the files of every due tenant (within the write budget); the runs.';
