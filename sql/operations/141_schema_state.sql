-- privileges: service
-- memex.schema_state: what readiness probes ask of the schema: the alembic revision the
-- database is at (null before the first migrate) and whether a migration runs right now
-- (memexdb.migrations holds a share row exclusive lock on memex.alembic_version while it
-- migrates; no tenant role may lock that table, so none can fake a migration). A security
-- definer, so that the service's role needs no access to the version table; it reveals
-- nothing of any tenant, so it needs no caller.
create or replace function memex.schema_state()
returns table (revision text, migrating boolean)
language plpgsql stable security definer set search_path = pg_catalog, pg_temp
as $$
begin
    return query
    select (select v.version_num::text from memex.alembic_version v limit 1),
           exists (select from pg_locks l
                   where l.locktype = 'relation' and l.granted
                     and l.database = (select d.oid from pg_database d
                                       where d.datname = current_database())
                     and l.relation = 'memex.alembic_version'::regclass
                     and l.mode = 'ShareRowExclusiveLock');
end
$$;

comment on function memex.schema_state() is
    'The schema revision and whether a migration holds its lock now (readiness probes).';
