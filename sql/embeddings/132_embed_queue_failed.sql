-- privileges: service
-- memex.embed_queue_failed: record that embedding these queued memories failed (in the
-- transaction of memex.embed_queue_take): attempts + 1, the error (first 1000
-- characters), and the next attempt after an exponential backoff, p_base_seconds after
-- the first failure, doubling with each one, at most p_max_seconds. An entry is never
-- dropped: it is retried at the cap until it succeeds or its memory is deleted.
-- Operator only. Returns the number of entries updated.
create or replace function memex.embed_queue_failed(
    p_ids uuid[],
    p_errors text[],
    p_base_seconds double precision default 10,
    p_max_seconds double precision default 3600
)
returns integer
language plpgsql volatile set search_path = pg_catalog, pg_temp
as $$
declare
    v_updated integer;
begin
    perform memex._authorize(null, null, 'admin');
    if coalesce(cardinality(p_errors), 0) <> coalesce(cardinality(p_ids), 0) then
        perform memex._invalid('errors', 'must have one error per id');
    end if;
    if p_base_seconds is null or p_base_seconds <= 0 then
        perform memex._invalid('base_seconds', 'must be positive');
    end if;
    if p_max_seconds is null or p_max_seconds < p_base_seconds then
        perform memex._invalid('max_seconds', 'must be at least base_seconds');
    end if;
    update memex.embed_queue q
    set attempts = q.attempts + 1,
        last_error = left(coalesce(f.error, 'unknown error'), 1000),
        -- 2^30 times any positive base passes any cap: no overflow for old entries
        next_attempt_at = clock_timestamp() + make_interval(secs => least(
            p_max_seconds, p_base_seconds * power(2, least(q.attempts, 30))))
    from unnest(p_ids, p_errors) as f(id, error)
    where q.memory_id = f.id;
    get diagnostics v_updated = row_count;
    return v_updated;
end
$$;

comment on function memex.embed_queue_failed(uuid[], text[], double precision,
                                              double precision) is
    'Record failed embeddings of queued memories: attempts + 1, error, exponential backoff.';
