-- privileges: tenant-helper
-- memex._actor: the caller as recorded on what it writes (memories.actor, audit_log).
create or replace function memex._actor()
returns text
language sql stable set search_path = pg_catalog, pg_temp
as $$ select coalesce(memex._caller() ->> 'actor', 'unknown') $$;

comment on function memex._actor() is
    'Who is writing: key:<id>, role:<sql role>, sql:<operator role> or open.';
