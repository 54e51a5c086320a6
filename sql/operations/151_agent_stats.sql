-- privileges: service
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
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := coalesce(p_now, now());
begin
    perform memex._check_page_limit(p_limit);
    perform memex._authorize(p_agent_id, null, 'admin');
    return query
        select a.agent_id, a.users,
               s.episodic, s.semantic, s.procedural, s.archived, s.expired, s.files,
               s.last_write_at
        from (select t.agent_id, count(*) as users from memex.tenants t
              where (p_agent_id is null or t.agent_id = p_agent_id)
                and (p_after is null or t.agent_id > p_after)
              group by t.agent_id
              order by t.agent_id
              limit p_limit) a
        cross join lateral memex._holdings(a.agent_id, null, v_now) s
        order by a.agent_id;
end
$$;

comment on function memex.agent_stats(text, integer, text, timestamptz) is
    'Agents with their users and memories by type, archived, expired and files (admin).';
