-- privileges: service
-- memex.dream_users: the consolidation status of each tenant (MemexAI's dream users), in
-- (agent_id, user_id) order after (p_after_agent_id, p_after_user_id): paused, the last
-- dream over its files, its last run (when, kind, status, error) and how many runs
-- ended done, failed or restored. p_agent_id null: every agent (admin callers of every
-- agent); p_limit 1 to 1000.
create or replace function memex.dream_users(
    p_agent_id text default null,
    p_limit integer default 100,
    p_after_agent_id text default null,
    p_after_user_id text default null
)
returns table (
    agent_id        text,
    user_id         text,
    paused          boolean,
    memory_count    bigint,
    last_dreamed_at timestamptz,
    last_run_id     bigint,
    last_run_at     timestamptz,
    last_run_kind   text,
    last_run_status text,
    last_error      text,
    runs_done       bigint,
    runs_failed     bigint,
    runs_restored   bigint
)
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
begin
    perform memex._check_page_limit(p_limit);
    if (p_after_agent_id is null) <> (p_after_user_id is null) then
        perform memex._invalid('after', 'needs both agent_id and user_id of the last row');
    end if;
    perform memex._authorize(p_agent_id, null, 'admin');
    return query
        select t.agent_id, t.user_id, t.dream_paused, t.memory_count, t.last_dreamed_at,
               l.id, l.started_at, l.kind, l.status,
               (select r.error from memex.consolidation_runs r
                where r.agent_id = t.agent_id and r.user_id = t.user_id
                  and r.status = 'failed' order by r.id desc limit 1),
               coalesce(c.done, 0), coalesce(c.failed, 0), coalesce(c.restored, 0)
        from memex.tenants t
        left join lateral (
            select r.id, r.started_at, r.kind, r.status from memex.consolidation_runs r
            where r.agent_id = t.agent_id and r.user_id = t.user_id
            order by r.id desc limit 1
        ) l on true
        left join lateral (
            select count(*) filter (where r.status = 'done') as done,
                   count(*) filter (where r.status = 'failed') as failed,
                   count(*) filter (where r.status = 'restored') as restored
            from memex.consolidation_runs r
            where r.agent_id = t.agent_id and r.user_id = t.user_id
        ) c on true
        where (p_agent_id is null or t.agent_id = p_agent_id)
          and (p_after_agent_id is null
               or (t.agent_id, t.user_id) > (p_after_agent_id, p_after_user_id))
        order by t.agent_id, t.user_id
        limit p_limit;
end
$$;

comment on function memex.dream_users(text, integer, text, text) is
    'Consolidation status per tenant: paused, last dream and run, run counts (admin).';
