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
-- One pass over the hits in order: a text the same as a higher-ranked hit's, as it is, is
-- a repeat without normalizing it again (the regular expression, ~6 us a text, was most of
-- this function's time); hits all distinct come back as the first p_top_k of p_hits
-- unchanged (p_hits is in search's order), otherwise only the repeats' scores are lowered
-- before the sort. Same answers as the single query it replaces, which normalized every
-- hit and rebuilt every row (bench/RESULTS.md, "Per-request cost, second round").
-- The texts and scores are read off the hits in one statement (subscripting an array of
-- 23-field rows per hit cost more than the loop); a text of words each of letters and
-- digits separated by single spaces, the usual one, is its own key in lower case without
-- the regular expression (the replacement would change nothing in it: ~2.6 -> 0.9 us a
-- text); the repeats are lowered in the sort itself (bench/RESULTS.md, "Per-request cost,
-- third round").
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
    v_n        integer;
    v_seen     text[] := '{}';  -- the distinct hits' normalized texts so far
    v_texts    text[] := '{}';  -- every text so far, as it is
    v_null     boolean := false;  -- a hit without content seen (compared as one text)
    v_key      text;
    v_content  text;
    v_dup      boolean[];  -- per hit: a repeat of a higher-ranked hit's text
    v_any      boolean := false;
    v_lowest   double precision;  -- the lowest score of the distinct hits
    v_floor    double precision;  -- a repeat's score at most
begin
    select array_agg(h.content order by h.o), array_agg(h.score order by h.o)
    into v_contents, v_scores
    from unnest(p_hits) with ordinality as h(id, agent_id, user_id, memory_type, content,
         importance, metadata, created_at, expires_at, similarity, text_rank, relevance,
         recency, score, source_ids, superseded_by, archived_at, updated_at,
         embedding_model, valid_from, valid_to, superseded_at, supersedes, o);
    v_n := coalesce(cardinality(v_contents), 0);
    v_dup := array_fill(false, array[v_n]);
    for i in 1 .. v_n loop
        v_content := v_contents[i];
        -- the same text as a higher-ranked hit's is a repeat without normalizing it again
        if v_content = any (v_texts) then
            v_dup[i] := true;
            v_any := true;
            continue;
        end if;
        v_texts := v_texts || v_content;
        v_key := case when v_content ~ '^[[:alnum:]]+( [[:alnum:]]+)*$' then lower(v_content)
                      else btrim(lower(regexp_replace(v_content, '[^[:alnum:]]+', ' ', 'g'))) end;
        if (v_key is null and v_null) or v_key = any (v_seen) then
            v_dup[i] := true;
            v_any := true;
        else
            if v_key is null then
                v_null := true;
            else
                v_seen := v_seen || v_key;
            end if;
            v_lowest := least(v_lowest, v_scores[i]);
            if v_lowest is null then
                v_lowest := v_scores[i];
            end if;
        end if;
    end loop;
    if not v_any and p_top_k >= 0 then
        return coalesce(p_hits[1:p_top_k], '{}');
    end if;
    v_floor := v_lowest - greatest(abs(v_lowest) * 1e-9, 1e-9);
    return coalesce(array(
        select row(h.id, h.agent_id, h.user_id, h.memory_type, h.content, h.importance,
                   h.metadata, h.created_at, h.expires_at, h.similarity, h.text_rank,
                   h.relevance, h.recency, h.score, h.source_ids, h.superseded_by,
                   h.archived_at, h.updated_at, h.embedding_model, h.valid_from,
                   h.valid_to, h.superseded_at, h.supersedes)::memex.search_hit
        from (select h.id, h.agent_id, h.user_id, h.memory_type, h.content, h.importance,
                     h.metadata, h.created_at, h.expires_at, h.similarity, h.text_rank,
                     h.relevance, h.recency,
                     case when v_dup[h.o] then least(h.score, v_floor) else h.score end
                         as score,
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
