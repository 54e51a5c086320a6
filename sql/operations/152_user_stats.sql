-- privileges: service
-- memex.user_stats: the users of one agent and what each holds, for the admin console, in
-- user_id order after p_after: live memories by type (files apart), memories
-- consolidation archived, expired rows not yet purged, files, the newest write, and
-- whether consolidation is paused for the user. Admin callers of the agent (all of its
-- users); p_limit 1 to 1000.
create or replace function memex.user_stats(
    p_agent_id text,
    p_limit integer default 100,
    p_after text default null,
    p_now timestamptz default null
)
returns table (
    agent_id      text,
    user_id       text,
    episodic      bigint,
    semantic      bigint,
    procedural    bigint,
    archived      bigint,
    expired       bigint,
    files         bigint,
    last_write_at timestamptz,
    dream_paused  boolean
)
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
declare
    v_now timestamptz := coalesce(p_now, now());
begin
    if p_agent_id is null then
        perform memex._invalid('agent_id', 'is required');
    end if;
    perform memex._check_page_limit(p_limit);
    perform memex._authorize(p_agent_id, null, 'admin');
    return query
        select t.agent_id, t.user_id,
               s.episodic, s.semantic, s.procedural, s.archived, s.expired, s.files,
               s.last_write_at, t.dream_paused
        from (select t0.agent_id, t0.user_id, t0.dream_paused from memex.tenants t0
              where t0.agent_id = p_agent_id
                and (p_after is null or t0.user_id > p_after)
              order by t0.user_id
              limit p_limit) t
        cross join lateral memex._holdings(t.agent_id, t.user_id, v_now) s
        order by t.user_id;
end
$$;

comment on function memex.user_stats(text, integer, text, timestamptz) is
    'Users of an agent with their memories by type, archived, expired, files, pause (admin).';
