-- privileges: tenant-helper
-- memex._caller_all: may the caller see every tenant? Row-level security policies call
-- it in a scalar subquery, so it runs once per statement (an InitPlan), not once per row.
-- Inlined there with memex._caller (no SET, every name qualified).
create or replace function memex._caller_all()
returns boolean
language sql stable
as $$
    select coalesce((memex._caller() operator(pg_catalog.->>) 'all')::pg_catalog.bool, false)
$$;

comment on function memex._caller_all() is
    'True when the caller may see every tenant (operator, or a key for every agent).';
