-- privileges: tenant-helper
-- memex._bound_caller: who is calling, for any session that is not the service
-- (memex._caller answers the service inline): as jsonb {"all", "agent", "users",
-- "access", "actor", "key"}.
--
--   1. a session whose login role is bound to a tenant in memex.sql_roles (direct SQL
--      callers): its binding, whatever any setting says (session_user, so that a bound
--      role cannot forge memex.caller to widen what a security definer function sees);
--      within a transaction memex._delegate set memex.delegate in (memorize-agent or
--      dream-agent), that agent is the actor, on behalf of the role: what it may see and
--      do stays the binding's;
--   2. a member of memex_tenant without a binding (not a superuser): nothing;
--   3. otherwise (the owner of the schema: the operator at psql, migrations, pg_cron) the
--      caller it entered for this transaction (memex.caller), else every tenant.
create or replace function memex._bound_caller()
returns jsonb
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
declare
    v_entered text := current_setting('memex.caller', true);
    v_bound   memex.sql_roles := memex._binding();
    v_agent   text;
begin
    if v_bound.role_name is not null then
        v_agent := current_setting('memex.delegate', true);
        if v_agent in ('memorize-agent', 'dream-agent') then
            return jsonb_build_object(
                'all', false, 'agent', v_bound.agent_id, 'users', to_jsonb(v_bound.user_ids),
                'access', v_bound.access, 'actor', v_agent,
                'on_behalf_of', 'role:' || session_user);
        end if;
        return jsonb_build_object(
            'all', false, 'agent', v_bound.agent_id, 'users', to_jsonb(v_bound.user_ids),
            'access', v_bound.access, 'actor', 'role:' || session_user);
    end if;
    if pg_has_role(session_user, 'memex_tenant', 'member')
       and not (select r.rolsuper from pg_roles r where r.rolname = session_user) then
        return '{"all": false, "access": "none", "actor": "unbound"}';
    end if;
    if v_entered is not null and v_entered <> '' then
        return v_entered::jsonb;
    end if;
    return jsonb_build_object('all', true, 'access', 'admin', 'actor', 'sql:' || session_user);
end
$$;

comment on function memex._bound_caller() is
    'The caller of a session other than the service''s: bound SQL role, or operator.';
