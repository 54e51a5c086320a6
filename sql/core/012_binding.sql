-- privileges: tenant-helper
-- memex._binding: the memex.sql_roles row of this session's login role, if any (a
-- security definer, so that SQL roles need no access to the table of bindings).
create or replace function memex._binding()
returns memex.sql_roles
language sql stable security definer set search_path = pg_catalog, pg_temp
as $$ select r from memex.sql_roles r where r.role_name = session_user $$;

comment on function memex._binding() is
    'The tenant binding of the session''s login role (memex.sql_roles), or null.';
