-- privileges: tenant-helper
-- memex._caller_agent: the one agent the caller is scoped to. Called by the policies in a
-- scalar subquery: once per statement. Inlined there with memex._caller (no SET, every
-- name qualified).
create or replace function memex._caller_agent()
returns text
language sql stable
as $$ select memex._caller() operator(pg_catalog.->>) 'agent' $$;

comment on function memex._caller_agent() is
    'The one agent the caller is scoped to (null when none or all).';
