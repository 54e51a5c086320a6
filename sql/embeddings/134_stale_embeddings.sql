-- privileges: service
-- memex.stale_embeddings: memories whose vector is not from p_embedding_model (every
-- memory: archived and expired ones too), in id order after p_after, p_limit at a time,
-- with their content: what `memexdb reembed` embeds again. Re-running from the start
-- finds only what is still stale, so an interrupted re-embedding resumes where it was.
-- Operator only.
create or replace function memex.stale_embeddings(
    p_embedding_model text,
    p_after uuid default null,
    p_limit integer default 64
)
returns table (memory_id uuid, content text, embedding_model text)
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
begin
    perform memex._authorize(null, null, 'admin');
    if p_embedding_model is null or p_embedding_model = '' then
        perform memex._invalid('embedding_model', 'is required');
    end if;
    perform memex._check_page_limit(p_limit);
    return query
    select m.id, m.content, m.embedding_model
    from memex.memories m
    where m.embedding_model <> p_embedding_model
      and (p_after is null or m.id > p_after)
    order by m.id
    limit p_limit;
end
$$;

comment on function memex.stale_embeddings(text, uuid, integer) is
    'Memories whose vector is not from the given model, in id order (memexdb reembed).';
