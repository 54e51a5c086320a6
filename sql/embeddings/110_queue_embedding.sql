-- privileges: service
-- memex._queue_embedding: ask the runtime's embed worker to embed a memory's own text
-- (SQL can write a memory, a summary or a cleaned-up file, but cannot run the model: it
-- stores a stand-in vector, e.g. the centroid of a summary's sources, and queues the
-- memory). Durable: the queue is a table, drained with SKIP LOCKED; NOTIFY memex_embed
-- wakes a listening worker at commit. Queuing a memory twice keeps one entry.
create or replace function memex._queue_embedding(p_memory_id uuid)
returns void
language sql volatile security definer set search_path = pg_catalog, pg_temp
as $$
    insert into memex.embed_queue (memory_id) values (p_memory_id)
    on conflict (memory_id) do update
        set attempts = 0, next_attempt_at = clock_timestamp(), last_error = null;
    select pg_notify('memex_embed', '');
$$;

comment on function memex._queue_embedding(uuid) is
    'Queue a memory for an embedding of its own text (NOTIFY memex_embed at commit).';
