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
-- Hits all distinct (the common case: one pass over the normalized texts tells) come back
-- as the first p_top_k of p_hits unchanged: no score moves, and p_hits is already in the
-- order the full query sorts by (memex.search builds it ordered by score desc, created_at
-- desc, id), so the answer is the same without the window, sort and re-aggregation
-- (bench/RESULTS.md, "Per-request cost, second round").
create or replace function memex._duplicates_last(
    p_hits memex.search_hit[],
    p_top_k integer
)
returns memex.search_hit[]
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
begin
    if p_top_k >= 0
       and (select count(distinct btrim(lower(regexp_replace(h.content, '[^[:alnum:]]+',
                                                             ' ', 'g'))))
                   = count(*)
            from unnest(p_hits) h) then
        return coalesce(p_hits[1:p_top_k], '{}');
    end if;
    return (
    with flagged as (
        select h.*,
               row_number() over (
                   partition by btrim(lower(regexp_replace(h.content, '[^[:alnum:]]+', ' ',
                                                           'g')))
                   order by h.ordinality) > 1 as duplicate
        from unnest(p_hits) with ordinality as h
    ),
    adjusted as (
        select f.*,
               case when f.duplicate then
                   least(f.score,
                         min(f.score) filter (where not f.duplicate) over ()
                         - greatest(abs(min(f.score) filter (where not f.duplicate) over ())
                                    * 1e-9, 1e-9))
               else f.score end as adjusted
        from flagged f
    )
    select coalesce(array_agg(row(a.id, a.agent_id, a.user_id, a.memory_type, a.content,
                                  a.importance, a.metadata, a.created_at, a.expires_at,
                                  a.similarity, a.text_rank, a.relevance, a.recency,
                                  a.adjusted, a.source_ids, a.superseded_by, a.archived_at,
                                  a.updated_at, a.embedding_model, a.valid_from, a.valid_to,
                                  a.superseded_at, a.supersedes)::memex.search_hit
                              order by a.adjusted desc, a.created_at desc, a.id),
                    '{}')
    from (select * from adjusted a
          order by a.adjusted desc, a.created_at desc, a.id
          limit p_top_k) a
    );
end
$$;

comment on function memex._duplicates_last(memex.search_hit[], integer) is
    'Search''s top k from its best hits, a repeated text scored below the distinct hits.';
