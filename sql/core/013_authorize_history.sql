-- privileges: tenant-helper
-- memex._authorize_history: raise unless p_records is a JSON array of history records
-- (file revisions, access-log entries, consolidation runs) and the caller is the operator
-- or holds admin access to each record's tenant (agent_id, user_id): history is
-- append-only for tenants, so a write key cannot import it. p_what names the records in
-- the error. The one check of the memex.import_* functions for history.
create or replace function memex._authorize_history(p_records jsonb, p_what text)
returns void
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
declare
    v_agent text;
    v_user  text;
begin
    if jsonb_typeof(p_records) is distinct from 'array' then
        perform memex._invalid('records', 'must be a JSON array of ' || p_what);
    end if;
    for v_agent, v_user in
        select distinct r ->> 'agent_id', r ->> 'user_id'
        from jsonb_array_elements(p_records) r order by 1, 2 loop
        perform memex._check_tenant(v_agent, v_user);
        perform memex._authorize(v_agent, v_user, 'admin');
    end loop;
end;
$$;

comment on function memex._authorize_history(jsonb, text) is
    'Raise unless p_records is a JSON array and the caller is admin of each record''s tenant.';
