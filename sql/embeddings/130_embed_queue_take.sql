-- privileges: service
-- memex.embed_queue_take: the embed worker's next batch from memex.embed_queue: entries
-- that are due (next_attempt_at <= now), longest due first, each with its memory's current
-- content; at most p_limit of them, and only while their contents add up to at most
-- p_max_chars (the first is always taken: one content may be 32768 characters), so that
-- embedding one batch takes seconds, not minutes. Entries are locked FOR UPDATE SKIP
-- LOCKED (another worker skips them) until the caller's transaction ends: the caller
-- embeds the contents, then in the same transaction stores the vectors
-- (memex.set_embeddings, which dequeues them) and records failures
-- (memex.embed_queue_failed). If it dies first, its transaction is rolled back and every
-- entry stays queued as it was; nothing is lost and nothing waits for a lease to expire.
-- The entry that would pass p_max_chars is locked too (it was read) and stays queued.
-- Operator only: the service's jobs, pg_cron, the database owner.
create or replace function memex.embed_queue_take(
    p_limit integer default 32,
    p_max_chars integer default 32768
)
returns table (memory_id uuid, content text, attempts integer)
language plpgsql volatile set search_path = pg_catalog, pg_temp
as $$
declare
    -- An explicit cursor fetches (and so locks) one row at a time: the rows past the
    -- budget are neither read nor locked.
    v_due cursor for
        select q.memory_id, m.content, q.attempts
        from memex.embed_queue q
        join memex.memories m on m.id = q.memory_id
        where q.next_attempt_at <= clock_timestamp()
        order by q.next_attempt_at, q.memory_id
        for update of q skip locked;
    v_row   record;
    v_taken integer := 0;
    v_chars bigint := 0;
begin
    perform memex._authorize(null, null, 'admin');
    if p_limit is null or p_limit < 1 then
        perform memex._invalid('limit', 'must be at least 1');
    end if;
    if p_max_chars is null or p_max_chars < 1 then
        perform memex._invalid('max_chars', 'must be at least 1');
    end if;
    open v_due;
    while v_taken < p_limit loop
        fetch v_due into v_row;
        exit when not found;
        exit when v_taken > 0 and v_chars + length(v_row.content) > p_max_chars;
        v_taken := v_taken + 1;
        v_chars := v_chars + length(v_row.content);
        memory_id := v_row.memory_id;
        content := v_row.content;
        attempts := v_row.attempts;
        return next;
    end loop;
    close v_due;
end
$$;

comment on function memex.embed_queue_take(integer, integer) is
    'Lock the next due entries of the embed queue (SKIP LOCKED) with their memories'' content.';
