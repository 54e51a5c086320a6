-- privileges: tenant-helper
-- memex._caller_all: may the caller see every tenant? Row-level security policies call
-- it in a scalar subquery, so it runs once per statement (an InitPlan), not once per row.
create or replace function memex._caller_all()
returns boolean
language sql stable set search_path = pg_catalog, pg_temp
as $$ select coalesce((memex._caller() ->> 'all')::boolean, false) $$;

comment on function memex._caller_all() is
    'True when the caller may see every tenant (operator, or a key for every agent).';
