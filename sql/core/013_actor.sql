-- privileges: tenant-helper
-- memex._actor: the caller as recorded on what it writes (memories.actor, audit_log).
-- Inlined where it is called (no SET, every name qualified): the default of
-- memories.actor and the revision triggers evaluate it in every write.
create or replace function memex._actor()
returns text
language sql stable
as $$ select coalesce(memex._caller() operator(pg_catalog.->>) 'actor', 'unknown') $$;

comment on function memex._actor() is
    'Who is writing: key:<id>, role:<sql role>, sql:<operator role> or open.';
