-- privileges: service
-- memex.audit_events: the audit log an admin caller may read (everything for an operator,
-- its agent's entries otherwise), newest first, p_limit at a time before id p_before.
create or replace function memex.audit_events(p_limit integer default 100, p_before bigint default null)
returns setof memex.audit_log
language plpgsql stable security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_caller jsonb := memex._authorize(memex._caller() ->> 'agent', null, 'admin');
begin
    perform memex._check_page_limit(p_limit);
    return query
    select a.* from memex.audit_log a
    where (p_before is null or a.id < p_before)
      and ((v_caller ->> 'all')::boolean or a.agent_id = v_caller ->> 'agent')
    order by a.id desc
    limit p_limit;
end
$$;

comment on function memex.audit_events(integer, bigint) is
    'Audit log entries within the admin caller''s scope, newest first.';
