-- privileges: service
-- memex.embed_queue_depth: the embed queue at a glance, for `memexdb status` and metrics:
-- entries queued, those due now, those that failed at least once (waiting out a backoff
-- or due again), the oldest entry's age and when the next entry is due (null: empty).
-- Operator only.
create or replace function memex.embed_queue_depth()
returns table (
    queued bigint,
    due bigint,
    failing bigint,
    oldest_enqueued_at timestamptz,
    next_attempt_at timestamptz
)
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
begin
    perform memex._authorize(null, null, 'admin');
    return query
    select count(*),
           count(*) filter (where q.next_attempt_at <= clock_timestamp()),
           count(*) filter (where q.attempts > 0),
           min(q.enqueued_at),
           min(q.next_attempt_at)
    from memex.embed_queue q;
end
$$;

comment on function memex.embed_queue_depth() is
    'Entries of the embed queue: queued, due, failing, oldest and next due times.';
