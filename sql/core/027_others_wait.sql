-- privileges: service
-- memex._others_wait: whether another session waits for a lock this transaction holds
-- (pg_blocking_pids over the lock requests not granted). A background job that writes
-- batch after batch in one transaction (memex.consolidate_due, memex.dream_due) asks it
-- between batches and stops there, so that its transaction commits and a client's write
-- it holds up waits at most one batch.
create or replace function memex._others_wait()
returns boolean
language sql volatile set search_path = pg_catalog, pg_temp
as $$
    select exists (
        select from (select distinct l.pid from pg_locks l
                     where not l.granted and l.pid <> pg_backend_pid()) w
        where pg_backend_pid() = any (pg_blocking_pids(w.pid)))
$$;

comment on function memex._others_wait() is
    'Whether another session waits for a lock this transaction holds (a job yields).';
