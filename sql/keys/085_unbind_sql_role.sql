-- privileges: service
-- memex.unbind_sql_role: remove a role's binding and its membership of memex_tenant (it
-- keeps nothing of memexdb). Operator only (not a security definer: see
-- memex.bind_sql_role); true when it was bound.
create or replace function memex.unbind_sql_role(p_role text)
returns boolean
language plpgsql volatile set search_path = pg_catalog, pg_temp
as $$
begin
    perform memex._authorize(null, null, 'admin');
    delete from memex.sql_roles r where r.role_name = p_role;
    if not found then
        return false;
    end if;
    execute format('revoke memex_tenant from %I', p_role);
    perform memex._audit('sql_role.unbind', null, null, jsonb_build_object('role', p_role));
    return true;
end
$$;

comment on function memex.unbind_sql_role(text) is
    'Remove a SQL role''s tenant binding and its memex_tenant membership (operator only).';
