-- privileges: service
-- memex.lock_waits: the sessions waiting now for a lock on one of memexdb's tables (a
-- migration behind an idle transaction, requests behind a migration), each with who
-- blocks it (pg_blocking_pids) and for how long it has waited; at most 20, the longest
-- waits first. For readiness probes (GET /health/ready reports them): reads pg_locks and
-- pg_stat_activity only, and pg_blocking_pids only for sessions that wait.
create or replace function memex.lock_waits()
returns table (pid integer, role text, relation text, mode text,
               waiting_seconds double precision, blocked_by integer[],
               blocker_roles text[])
language sql stable set search_path = pg_catalog, pg_temp
as $$
    select l.pid, a.usename::text, c.relname::text, l.mode,
           extract(epoch from clock_timestamp() - l.waitstart)::float8,
           b.pids,
           (select coalesce(array_agg(distinct x.usename::text), '{}')
            from pg_stat_activity x where x.pid = any (b.pids))
    from pg_locks l
    join pg_class c on c.oid = l.relation and c.relnamespace = 'memex'::regnamespace
    left join pg_stat_activity a on a.pid = l.pid
    cross join lateral (select pg_blocking_pids(l.pid) as pids) b
    where not l.granted and l.locktype = 'relation'
      and l.database = (select d.oid from pg_database d where d.datname = current_database())
    order by l.waitstart nulls last
    limit 20
$$;

comment on function memex.lock_waits() is
    'Sessions waiting for a lock on a memex table, with their blockers (readiness probes).';
