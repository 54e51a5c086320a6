-- privileges: tenant-helper
-- memex._ann_heads: for memex._candidates_ann (issue 36), the heads of the superseded
-- memories it found among the nearest and text-matching ones (p_ids, each with the best
-- similarity and BM25 score it has there: p_similarity, p_text_rank), each head once (the
-- last of its chain that the search sees, memex._supersession_heads), when shown (the walk
-- keeps the heads live but for their own supersession), with its own values and what it
-- inherits: the best similarity and BM25 score of the memories it superseded (the new
-- version worded unlike the question, the old one like it).
-- PL/pgSQL for its cached plan: as a step of memex._candidates_ann this join was planned
-- with every call of it (force_custom_plan), a tenant without links too, ~3 % of a
-- default request at 50,000 memories (bench/RESULTS.md, "Supersession out of the plan").
create or replace function memex._ann_heads(
    p_agent_id text,
    p_user_id text,
    p_query_embedding public.halfvec,
    p_now timestamptz,
    p_include_superseded boolean,
    p_filters memex.search_filters,
    p_ids uuid[],
    p_similarity double precision[],
    p_text_rank double precision[]
)
returns table (head uuid, importance double precision, created_at timestamptz,
               similarity double precision, tsv tsvector, tsv_length integer,
               inherited_similarity double precision, inherited_text_rank double precision)
-- a few links among the candidates
language plpgsql stable rows 10 set search_path = pg_catalog, public, pg_temp
set plan_cache_mode = force_generic_plan
as $$
#variable_conflict use_column
begin
    if coalesce(cardinality(p_ids), 0) = 0 then
        return;  -- no candidate superseded: nothing to walk
    end if;
    return query
    select h.head, memex._valid_importance(l.importance, l.valid_to, p_now, p_filters.valid_at),
           l.created_at, 1 - (l.embedding <=> p_query_embedding), l.tsv, l.tsv_length,
           h.similarity, h.text_rank
    from (select h.head, max(c.similarity) as similarity, max(c.text_rank) as text_rank
          from memex._supersession_heads(p_agent_id, p_user_id, p_now, p_filters, p_ids) h
          join unnest(p_ids, p_similarity, p_text_rank) c(id, similarity, text_rank)
            on c.id = h.id
          group by h.head) h
    join memex.memories l on l.id = h.head
    where p_include_superseded or l.superseded_at is null or l.superseded_at > p_filters.as_of;
end
$$;

comment on function memex._ann_heads(text, text, public.halfvec, timestamptz, boolean,
                                     memex.search_filters, uuid[], double precision[],
                                     double precision[]) is
    'The heads of superseded ANN candidates, with the best match they inherit.';
