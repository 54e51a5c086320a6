-- privileges: tenant-helper
-- memex._duplicates_last: memex.search's top k from its best-scored hits (p_hits, in
-- search's order, more than k of them), with repeated texts pushed down. A hit whose
-- content is the same as a higher-ranked hit's (compared in lower case, every run of
-- characters other than letters and digits read as one space: "Traffic on the way home
-- was terrible!" repeats "traffic on the way home was terrible.") adds nothing for the
-- reader: its score becomes its own, or just below the lowest score of the distinct hits
-- (new score: that score minus 1e-9 of it, at least 1e-9) when its own is not already
-- lower, so the distinct hits rank first and the copies fill the top k only when the
-- distinct hits cannot. Nothing is dropped from the ranking; the first p_top_k are
-- returned in search's order (score, newer first, id). Only the texts are compared, not
-- the embeddings: a different text is a different memory however similar ("I live at 61
-- King's Road" after "I live at 59 King's Road") (bench/RESULTS.md, "Near-duplicates
-- pushed down").
-- The rule itself is memex._lowered_repeats (one pass over the texts in order, shared
-- with search's vector path): hits all distinct come back as the first p_top_k of p_hits
-- unchanged (p_hits is in search's order), otherwise only the repeats' scores are lowered
-- before the sort. Same answers as the single query it replaces, which normalized every
-- hit and rebuilt every row (bench/RESULTS.md, "Per-request cost, second round").
-- The texts and scores are read off the hits in one statement (subscripting an array of
-- 23-field rows per hit cost more than the loop); the repeats are lowered in the sort
-- itself (bench/RESULTS.md, "Per-request cost, third round").
create or replace function memex._duplicates_last(
    p_hits memex.search_hit[],
    p_top_k integer
)
returns memex.search_hit[]
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
declare
    v_contents text[];
    v_scores   double precision[];
    v_lowered  double precision[];  -- the scores with the repeats lowered (null: none)
begin
    select array_agg(h.content order by h.o), array_agg(h.score order by h.o)
    into v_contents, v_scores
    from unnest(p_hits) with ordinality as h(id, agent_id, user_id, memory_type, content,
         importance, metadata, created_at, expires_at, similarity, text_rank, relevance,
         recency, score, source_ids, superseded_by, archived_at, updated_at,
         embedding_model, valid_from, valid_to, superseded_at, supersedes, o);
    v_lowered := memex._lowered_repeats(v_contents, v_scores);
    if v_lowered is null and p_top_k >= 0 then
        return coalesce(p_hits[1:p_top_k], '{}');
    end if;
    return coalesce(array(
        select row(h.id, h.agent_id, h.user_id, h.memory_type, h.content, h.importance,
                   h.metadata, h.created_at, h.expires_at, h.similarity, h.text_rank,
                   h.relevance, h.recency, h.score, h.source_ids, h.superseded_by,
                   h.archived_at, h.updated_at, h.embedding_model, h.valid_from,
                   h.valid_to, h.superseded_at, h.supersedes)::memex.search_hit
        from (select h.id, h.agent_id, h.user_id, h.memory_type, h.content, h.importance,
                     h.metadata, h.created_at, h.expires_at, h.similarity, h.text_rank,
                     h.relevance, h.recency,
                     coalesce(v_lowered[h.o], h.score) as score,
                     h.source_ids, h.superseded_by, h.archived_at, h.updated_at,
                     h.embedding_model, h.valid_from, h.valid_to, h.superseded_at,
                     h.supersedes
              from unnest(p_hits) with ordinality as h(id, agent_id, user_id, memory_type,
                   content, importance, metadata, created_at, expires_at, similarity,
                   text_rank, relevance, recency, score, source_ids, superseded_by,
                   archived_at, updated_at, embedding_model, valid_from, valid_to,
                   superseded_at, supersedes, o)) h
        order by h.score desc, h.created_at desc, h.id
        limit p_top_k), '{}');
end
$$;

comment on function memex._duplicates_last(memex.search_hit[], integer) is
    'Search''s top k from its best hits, a repeated text scored below the distinct hits.';
