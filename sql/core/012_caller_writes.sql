-- privileges: tenant-helper
-- memex._caller_writes: may the caller write? Called by the policies in a scalar
-- subquery: once per statement.
create or replace function memex._caller_writes()
returns boolean
language sql stable set search_path = pg_catalog, pg_temp
as $$ select coalesce(memex._caller() ->> 'access' in ('write', 'admin'), false) $$;

comment on function memex._caller_writes() is
    'True when the caller may write (access write or admin).';
