-- privileges: tenant-helper
-- memex._content_max_chars: the most characters a memory's (and a file's) content may
-- hold, defined once for SQL; memexdb.fields.CONTENT_MAX_CHARS is Python's, and
-- tests/test_params.py checks the two agree at the bound.
create or replace function memex._content_max_chars()
returns integer
language sql immutable parallel safe set search_path = pg_catalog, pg_temp
as $$ select 32768 $$;

comment on function memex._content_max_chars() is
    'The most characters a memory''s or a file''s content may hold (32768).';
