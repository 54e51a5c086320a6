-- privileges: tenant
-- memex.access_events: the access log of tenant (agent_id, user_id), newest first,
-- entries at or after p_since and before p_until (null: unbounded), p_limit (1 to 1000)
-- at a time with ids below p_before (the next page). Reading the log is not itself logged.
create or replace function memex.access_events(
    p_agent_id text,
    p_user_id text,
    p_since timestamptz default null,
    p_until timestamptz default null,
    p_limit integer default 100,
    p_before bigint default null
)
returns setof memex.access_log
language plpgsql stable security definer set search_path = pg_catalog, pg_temp
as $$
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._check_page_limit(p_limit);
    perform memex._authorize(p_agent_id, p_user_id, 'read');
    return query
        select l.* from memex.access_log l
        where l.agent_id = p_agent_id and l.user_id = p_user_id
          and (p_since is null or l.at >= p_since)
          and (p_until is null or l.at < p_until)
          and (p_before is null or l.id < p_before)
        order by l.id desc
        limit p_limit;
end
$$;

comment on function memex.access_events(text, text, timestamptz, timestamptz, integer, bigint) is
    'A page of a tenant''s access log, newest first, within a time range.';
