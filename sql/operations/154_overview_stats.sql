-- privileges: service
-- memex.overview_stats: the database's half of the admin console's overview charts, one
-- row per figure (metric, agent_id, user_id, day, kind, value):
--   'tenants', 'memories'         totals (memex.tenants.memory_count, no scan)
--   'tenant_memories'             the p_tenants largest tenants and their memories
--   'memories_created'            memories each of those tenants created per day, over
--                                 the last p_days days (their (agent_id, user_id,
--                                 created_at) index: a range scan per tenant, never the
--                                 whole table)
--   'consolidation_runs'          runs started per day and kind, last p_days days
--   'memories_condensed'          memories archived by the runs that finished per day
-- Days are UTC dates. Operator only (memex._authorize(null, null, 'admin')).
create or replace function memex.overview_stats(
    p_days integer default 14,
    p_tenants integer default 8,
    p_now timestamptz default null
)
returns table (
    metric   text,
    agent_id text,
    user_id  text,
    day      date,
    kind     text,
    value    bigint
)
language plpgsql stable set search_path = pg_catalog, pg_temp
set lock_timeout = '500ms'
as $$
declare
    v_now   timestamptz := coalesce(p_now, now());
    v_since timestamptz;
begin
    if p_days is null or p_days not between 1 and 90 then
        perform memex._invalid('days', 'must be 1 to 90');
    end if;
    if p_tenants is null or p_tenants not between 1 and 50 then
        perform memex._invalid('tenants', 'must be 1 to 50');
    end if;
    perform memex._authorize(null, null, 'admin');
    v_since := (date_trunc('day', v_now at time zone 'UTC') - make_interval(days => p_days - 1))
               at time zone 'UTC';
    return query
    select 'tenants', null::text, null::text, null::date, null::text, count(*)::bigint
    from memex.tenants
    union all
    select 'memories', null, null, null, null, coalesce(sum(t.memory_count), 0)::bigint
    from memex.tenants t;

    return query
    with top as (
        select t.agent_id, t.user_id, t.memory_count
        from memex.tenants t
        where t.memory_count > 0
        order by t.memory_count desc, t.agent_id, t.user_id
        limit p_tenants
    )
    select 'tenant_memories', top.agent_id, top.user_id, null::date, null::text,
           top.memory_count
    from top
    union all
    select 'memories_created', top.agent_id, top.user_id, c.day, null, c.n
    from top
    cross join lateral (
        select (m.created_at at time zone 'UTC')::date as day, count(*)::bigint as n
        from memex.memories m
        where m.agent_id = top.agent_id and m.user_id = top.user_id
          and m.created_at >= v_since and m.created_at <= v_now
        group by 1
    ) c;

    return query
    select 'consolidation_runs', null::text, null::text,
           (r.started_at at time zone 'UTC')::date, r.kind, count(*)::bigint
    from memex.consolidation_runs r
    where r.started_at >= v_since and r.started_at <= v_now
    group by (r.started_at at time zone 'UTC')::date, r.kind
    union all
    select 'memories_condensed', null, null, (r.finished_at at time zone 'UTC')::date, null,
           sum(r.memories_in)::bigint
    from memex.consolidation_runs r
    where r.status in ('done', 'restored') and r.kind in ('condense', 'dream')
      and r.finished_at >= v_since and r.finished_at <= v_now
    group by (r.finished_at at time zone 'UTC')::date;
end
$$;

comment on function memex.overview_stats(integer, integer, timestamptz) is
    'The admin console overview: totals, the largest tenants and their daily growth, '
    'consolidation runs and memories condensed per day; operator only.';
