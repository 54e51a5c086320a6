-- privileges: service
-- memex.set_embeddings: store vectors computed from the given contents. Each memory whose
-- content is still exactly the text that was embedded gets its vector and
-- p_embedding_model, and leaves the embed queue. A memory changed since (its new content
-- needs a vector of its own: it stays queued if it was), deleted, or locked by a writer
-- at this moment is left as it is. updated_at does not change: the content did not.
-- Locked rows are skipped rather than waited for: the embed worker calls this while it
-- holds queue entries (memex.embed_queue_take), and a writer deleting one of those
-- memories holds the memory and waits for its entry (the cascade); waiting here would
-- close the cycle. Used by the embed worker and `memexdb reembed`. Operator only.
-- Returns the number of memories written.
create or replace function memex.set_embeddings(
    p_ids uuid[],
    p_contents text[],
    p_embeddings vector[],
    p_embedding_model text
)
returns integer
language plpgsql volatile set search_path = pg_catalog, public, pg_temp
as $$
declare
    v_written integer;
begin
    perform memex._authorize(null, null, 'admin');
    if coalesce(cardinality(p_contents), 0) <> coalesce(cardinality(p_ids), 0)
       or coalesce(cardinality(p_embeddings), 0) <> coalesce(cardinality(p_ids), 0) then
        perform memex._invalid('ids', 'ids, contents and embeddings must have the same length');
    end if;
    if p_embedding_model is null or p_embedding_model = '' then
        perform memex._invalid('embedding_model', 'is required');
    end if;
    if exists (select from unnest(p_embeddings) e
               where e is null or vector_dims(e) <> memex.embedding_dims()) then
        perform memex._invalid('embeddings', format('must each have %s dimensions',
                                                    memex.embedding_dims()));
    end if;
    if (select count(distinct i) from unnest(p_ids) i) <> cardinality(p_ids) then
        perform memex._invalid('ids', 'must not repeat an id');
    end if;

    with given as (
        select * from unnest(p_ids, p_contents, p_embeddings) as g(id, content, embedding)
    ),
    unchanged as (
        select m.id from memex.memories m
        join given g on g.id = m.id and m.content = g.content
        for update of m skip locked
    ),
    written as (
        update memex.memories m
        set embedding = g.embedding, embedding_model = p_embedding_model
        from given g
        where g.id = m.id and m.id in (select u.id from unchanged u)
        returning m.id
    ),
    dequeued as (
        delete from memex.embed_queue q using written w where q.memory_id = w.id
    )
    select count(*) into v_written from written;
    return v_written;
end
$$;

comment on function memex.set_embeddings(uuid[], text[], vector[], text) is
    'Store vectors of memories whose content is still what was embedded; dequeue them.';
