-- privileges: tenant-helper
-- memex._caller: who is calling, as jsonb {"all", "agent", "users", "access", "actor",
-- "key"}: what row-level security and memex._authorize check.
--
--   1. the service (recognised by its SET ROLE memex_app, the `role` setting, not only by
--      current_user: inside a security definer function current_user is memex_owner):
--      the caller it entered for this transaction (memex._enter sets memex.caller from an
--      API key, memex._enter_operator and memex._delegate likewise), else nothing;
--   2. any other session: memex._bound_caller (a bound SQL role's binding, whatever any
--      setting says; an unbound tenant role: nothing; the operator: every tenant).
-- Only the service is taken at its setting's word: memex_app is a NOLOGIN role that only
-- the operator's login roles are members of, so no tenant session can SET ROLE to it (nor
-- set `role` with set_config), and a tenant role's own memex.caller is never read.
-- A SQL function without SET and with every name qualified, so that it is inlined: the
-- row-level security policies evaluate it (through memex._caller_all, _caller_writes)
-- several times in every statement on a tenant table, and memex._actor and _on_behalf_of
-- in every write; as a PL/pgSQL call with SET, each evaluation cost ~5-10 us and a
-- superseding store ~25 of them (bench/RESULTS.md, "The caller inline"). The policies'
-- memex._caller_agent and _caller_users, which a caller of every tenant never evaluates,
-- are PL/pgSQL calls: inlined, their copies of this expression were compiled at the start
-- of every statement all the same (bench/RESULTS.md, "Issue 39 item 1, Postgres side
-- (session 9)").
create or replace function memex._caller()
returns jsonb
language sql stable
as $$
    select case
        when current_user operator(pg_catalog.=) 'memex_app'
             or pg_catalog.current_setting('role', true) operator(pg_catalog.=) 'memex_app'
        then coalesce(
            case when pg_catalog.current_setting('memex.caller', true) operator(pg_catalog.<>) ''
                 then pg_catalog.current_setting('memex.caller', true)::pg_catalog.jsonb end,
            '{"all": false, "access": "none", "actor": "nobody"}'::pg_catalog.jsonb)
        else memex._bound_caller() end
$$;

comment on function memex._caller() is
    'The caller of this transaction (bound SQL role, entered API key or operator) as jsonb.';
