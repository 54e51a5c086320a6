-- privileges: tenant-helper
-- memex._caller: who is calling, as jsonb {"all", "agent", "users", "access", "actor",
-- "key"}: what row-level security and memex._authorize check.
--
--   1. a session whose login role is bound to a tenant in memex.sql_roles (direct SQL
--      callers): its binding, whatever any setting says (session_user, so that a bound
--      role cannot forge memex.caller to widen what a security definer function sees);
--      within a transaction memex._delegate set memex.delegate in (memorize-agent or
--      dream-agent), that agent is the actor, on behalf of the role: what it may see and
--      do stays the binding's;
--   2. otherwise the caller the service entered for this transaction (memex._enter sets
--      memex.caller from an API key);
--   3. otherwise memex_app and other members of memex_tenant see nothing, and the owner
--      of the schema (the operator at psql, migrations, pg_cron) sees every tenant.
-- The service is recognised by its SET ROLE (the `role` setting), not only by
-- current_user: inside a security definer function current_user is memex_owner, and the
-- service without a caller must see nothing there either.
create or replace function memex._caller()
returns jsonb
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
declare
    v_entered text := current_setting('memex.caller', true);
    v_bound   memex.sql_roles;
    v_agent   text;
    -- memex_app is only ever the service (a bound login role cannot become it)
    v_service boolean := current_user = 'memex_app'
                         or current_setting('role', true) = 'memex_app';
begin
    if not v_service then
        v_bound := memex._binding();
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
    end if;
    if v_entered is not null and v_entered <> '' then
        return v_entered::jsonb;
    end if;
    if v_service then
        return '{"all": false, "access": "none", "actor": "nobody"}';
    end if;
    return jsonb_build_object('all', true, 'access', 'admin', 'actor', 'sql:' || session_user);
end
$$;

comment on function memex._caller() is
    'The caller of this transaction (bound SQL role, entered API key or operator) as jsonb.';
