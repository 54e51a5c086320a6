-- privileges: service
-- memex.bind_sql_role: let an existing login role call the SQL API directly, as one
-- tenant: it joins memex_tenant (usage of the schema, the tenant functions, and the
-- tables under row-level security), and memex._caller resolves it to (agent_id,
-- user_ids, access) whatever it sets. Binding again replaces the binding. Operator only:
-- not a security definer, since granting memex_tenant needs its ADMIN option, which the
-- operator's role (the one that migrated) holds and memex_owner must not (a member of
-- memex_tenant is resolved as a tenant by memex._caller).
--   create role app_alice login password '...';
--   select memex.bind_sql_role('app_alice', 'assistant', array['alice'], 'write');
create or replace function memex.bind_sql_role(
    p_role text, p_agent_id text, p_user_ids text[] default null, p_access text default 'write'
)
returns memex.sql_roles
language plpgsql volatile set search_path = pg_catalog, pg_temp
as $$
declare
    v_row memex.sql_roles;
begin
    perform memex._authorize(null, null, 'admin');
    if not exists (select from pg_roles r where r.rolname = p_role) then
        perform memex._invalid('role', 'no such role: create it first (create role ... login)');
    end if;
    if exists (select from pg_roles r where r.rolname = p_role
               and (r.rolsuper or r.rolbypassrls or pg_has_role(p_role, 'memex_app', 'member'))) then
        perform memex._invalid('role', 'must not be a superuser, bypass RLS or be memex_app');
    end if;
    if p_access is null or p_access not in ('read', 'write') then
        perform memex._invalid('access', 'must be read or write');
    end if;
    perform memex._check_tenant(p_agent_id, coalesce(p_user_ids[1], 'all'));
    execute format('grant memex_tenant to %I', p_role);
    insert into memex.sql_roles as r (role_name, agent_id, user_ids, access)
    values (p_role, p_agent_id, p_user_ids, p_access)
    on conflict (role_name) do update
        set agent_id = excluded.agent_id, user_ids = excluded.user_ids, access = excluded.access
    returning r.* into v_row;
    perform memex._audit('sql_role.bind', p_agent_id, null, jsonb_build_object(
        'role', p_role, 'user_ids', p_user_ids, 'access', p_access));
    return v_row;
end
$$;

comment on function memex.bind_sql_role(text, text, text[], text) is
    'Bind a login role to one tenant for direct SQL calls (operator only).';
