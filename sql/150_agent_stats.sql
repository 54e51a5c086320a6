-- memex.agent_stats: the agents (tenants' first half) and what each holds, for the admin
-- console, in agent_id order after p_after: users, live memories by type (files apart),
-- memories consolidation archived, expired rows not yet purged, files, the newest write.
-- p_agent_id: that agent only (an agent's admin key names its own); null: every agent
-- (admin callers of every agent). p_limit 1 to 1000. Row-level security applies as well.
create or replace function memex.agent_stats(
    p_agent_id text default null,
    p_limit integer default 100,
    p_after text default null,
    p_now timestamptz default null
)
returns table (
    agent_id      text,
    users         bigint,
    episodic      bigint,
    semantic      bigint,
    procedural    bigint,
    archived      bigint,
    expired       bigint,
    files         bigint,
    last_write_at timestamptz
)
language plpgsql
stable
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := coalesce(p_now, now());
begin
    if p_limit is null or p_limit not between 1 and 1000 then
        perform memex._invalid('limit', 'must be 1 to 1000');
    end if;
    perform memex._authorize(p_agent_id, null, 'admin');
    return query
        select a.agent_id, a.users,
               coalesce(s.episodic, 0), coalesce(s.semantic, 0), coalesce(s.procedural, 0),
               coalesce(s.archived, 0), coalesce(s.expired, 0), coalesce(s.files, 0),
               s.last_write_at
        from (select t.agent_id, count(*) as users from memex.tenants t
              where (p_agent_id is null or t.agent_id = p_agent_id)
                and (p_after is null or t.agent_id > p_after)
              group by t.agent_id
              order by t.agent_id
              limit p_limit) a
        left join lateral (
            select count(*) filter (where m.path is null and m.archived_at is null
                                      and m.memory_type = 'episodic' and not m.gone)
                       as episodic,
                   count(*) filter (where m.path is null and m.archived_at is null
                                      and m.memory_type = 'semantic' and not m.gone)
                       as semantic,
                   count(*) filter (where m.path is null and m.archived_at is null
                                      and m.memory_type = 'procedural' and not m.gone)
                       as procedural,
                   count(*) filter (where m.path is null and m.archived_at is not null)
                       as archived,
                   count(*) filter (where m.path is null and m.archived_at is null and m.gone)
                       as expired,
                   count(*) filter (where m.path is not null) as files,
                   max(m.updated_at) as last_write_at
            from (select r.path, r.archived_at, r.memory_type, r.updated_at,
                         coalesce(r.expires_at <= v_now, false) as gone
                  from memex.memories r where r.agent_id = a.agent_id) m
        ) s on true
        order by a.agent_id;
end
$$;

comment on function memex.agent_stats(text, integer, text, timestamptz) is
    'Agents with their users and memories by type, archived, expired and files (admin).';
