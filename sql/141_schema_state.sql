-- memex.schema_state: what readiness probes ask of the schema: the alembic revision the
-- database is at (null before the first migrate) and whether a migration runs right now
-- (memexdb.migrations holds the transaction-level advisory lock 0x6D656D6578, "memex",
-- while it migrates: classid is its high 32 bits, objid its low 32 bits). A security
-- definer, so that the service's role needs no access to the version table; it reveals
-- nothing of any tenant, so it needs no caller.
create or replace function memex.schema_state()
returns table (revision text, migrating boolean)
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
    return query
    select (select v.version_num::text from memex.alembic_version v limit 1),
           exists (select from pg_locks l
                   where l.locktype = 'advisory' and l.granted
                     and l.classid = 109 and l.objid = 1701668216 and l.objsubid = 1);
end
$$;

comment on function memex.schema_state() is
    'The schema revision and whether a migration holds its lock now (readiness probes).';
