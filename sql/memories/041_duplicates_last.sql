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
create or replace function memex._duplicates_last(
    p_hits memex.search_hit[],
    p_top_k integer
)
returns memex.search_hit[]
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
declare
    v_n      integer := coalesce(cardinality(p_hits), 0);
    v_seen   text[] := '{}';  -- the distinct hits' normalized texts so far
    v_texts  text[] := '{}';  -- every text so far, as it is
    v_null   boolean := false;  -- a hit without content seen (compared as one text)
    v_key    text;
    v_dup    boolean[];  -- per hit: a repeat of a higher-ranked hit's text
    v_any    boolean := false;
    v_lowest double precision;  -- the lowest score of the distinct hits
    v_hits   memex.search_hit[] := p_hits;
    v_hit    memex.search_hit;
begin
    for i in 1 .. v_n loop
        -- the same text as a higher-ranked hit's is a repeat without normalizing it again
        -- (the regular expression is most of this function's time: ~6 us a text)
        if p_hits[i].content = any (v_texts) then
            v_dup[i] := true;
            v_any := true;
            continue;
        end if;
        v_texts := v_texts || p_hits[i].content;
        v_key := btrim(lower(regexp_replace(p_hits[i].content, '[^[:alnum:]]+', ' ', 'g')));
        if (v_key is null and v_null) or v_key = any (v_seen) then
            v_dup[i] := true;
            v_any := true;
        else
            v_dup[i] := false;
            if v_key is null then
                v_null := true;
            else
                v_seen := v_seen || v_key;
            end if;
            v_lowest := least(v_lowest, p_hits[i].score);
            if v_lowest is null then
                v_lowest := p_hits[i].score;
            end if;
        end if;
    end loop;
    if not v_any and p_top_k >= 0 then
        return coalesce(p_hits[1:p_top_k], '{}');
    end if;
    for i in 1 .. v_n loop
        if v_dup[i] then
            v_hit := p_hits[i];
            v_hit.score := least(v_hit.score,
                                 v_lowest - greatest(abs(v_lowest) * 1e-9, 1e-9));
            v_hits[i] := v_hit;
        end if;
    end loop;
    return coalesce(array(select v_hits[i] from generate_subscripts(v_hits, 1) i
                          order by (v_hits[i]).score desc, (v_hits[i]).created_at desc,
                                   (v_hits[i]).id
                          limit p_top_k), '{}');
end
$$;

comment on function memex._duplicates_last(memex.search_hit[], integer) is
    'Search''s top k from its best hits, a repeated text scored below the distinct hits.';
