-- privileges: tenant-helper
-- memex._caller_writes: may the caller write? Called by the policies in a scalar
-- subquery: once per statement. Inlined there with memex._caller (no SET, every name
-- qualified).
create or replace function memex._caller_writes()
returns boolean
language sql stable
as $$
    select coalesce((memex._caller() operator(pg_catalog.->>) 'access')
                    operator(pg_catalog.=) any ('{write,admin}'::pg_catalog.text[]), false)
$$;

comment on function memex._caller_writes() is
    'True when the caller may write (access write or admin).';
