-- privileges: service
-- memex.consolidation_history: consolidation runs, newest first (ids below p_before, the
-- next page; p_limit 1 to 1000): of one tenant, of every user of an agent (p_user_id
-- null), of a user id across agents (p_agent_id null) or of every tenant (both null):
-- the last two for callers of every agent. The caller's scope applies (memex._authorize,
-- and row-level security). Ids are numbers within each agent's history
-- (memex._history_id): within one agent, newest first; over several agents, by number
-- (then agent), and a page ends with every run of its last number (it may hold more than
-- p_limit runs then), so that the next page, below that number, misses none.
create or replace function memex.consolidation_history(
    p_agent_id text default null,
    p_user_id text default null,
    p_limit integer default 100,
    p_before bigint default null
)
returns setof memex.consolidation_runs
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
begin
    perform memex._check_page_limit(p_limit);
    perform memex._authorize(p_agent_id, case when p_agent_id is not null then p_user_id end,
                             'read');
    return query
        select p.* from (
            select r.* from memex.consolidation_runs r
            where (p_agent_id is null or r.agent_id = p_agent_id)
              and (p_user_id is null or r.user_id = p_user_id)
              and (p_before is null or r.id < p_before)
            order by r.id desc
            fetch first (p_limit) rows with ties
        ) p
        order by p.id desc, p.agent_id;
end
$$;

comment on function memex.consolidation_history(text, text, integer, bigint) is
    'Consolidation runs of a tenant, an agent or every tenant, newest first.';
