-- privileges: tenant-helper
-- memex._caller_agent: the one agent the caller is scoped to. Called by the policies in a
-- scalar subquery: once per statement.
create or replace function memex._caller_agent()
returns text
language sql stable set search_path = pg_catalog, pg_temp
as $$ select memex._caller() ->> 'agent' $$;

comment on function memex._caller_agent() is
    'The one agent the caller is scoped to (null when none or all).';
