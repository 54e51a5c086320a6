-- privileges: tenant-helper
-- memex._lowered_repeats: the near-duplicate rule of memex.search (memex._duplicates_last)
-- on the texts and scores of its best hits alone, in search's order (p_contents[i] and
-- p_scores[i] of the i-th best hit): the scores with each repeat lowered, or null when no
-- hit repeats a higher-ranked one (then nothing changes). A hit whose content is the same
-- as a higher-ranked hit's (compared in lower case, every run of characters other than
-- letters and digits read as one space; hits without content are one text) is a repeat;
-- its score becomes its own, or just below the lowest score of the distinct hits (that
-- score minus 1e-9 of it, at least 1e-9) when its own is not already lower.
-- One pass over the hits in order: a text the same as a higher-ranked hit's, as it is, is
-- a repeat without normalizing it again; a text of words each of letters and digits
-- separated by single spaces, the usual one, is its own key in lower case without the
-- regular expression (bench/RESULTS.md, "Per-request cost, third round").
-- Taking arrays, not memex.search_hit rows, lets search's vector path read the whole rows
-- of its top k only (bench/RESULTS.md, "Issue 39 item 1, Postgres side (session 8)").
create or replace function memex._lowered_repeats(
    p_contents text[],
    p_scores double precision[]
)
returns double precision[]
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
declare
    v_n       integer := coalesce(cardinality(p_contents), 0);
    v_seen    text[] := '{}';  -- the distinct hits' normalized texts so far
    v_texts   text[] := '{}';  -- every text so far, as it is
    v_null    boolean := false;  -- a hit without content seen (compared as one text)
    v_key     text;
    v_content text;
    v_dup     boolean[] := array_fill(false, array[v_n]);  -- per hit: a repeat
    v_any     boolean := false;
    v_lowest  double precision;  -- the lowest score of the distinct hits
    v_floor   double precision;  -- a repeat's score at most
    v_scores  double precision[] := p_scores;
begin
    for i in 1 .. v_n loop
        v_content := p_contents[i];
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
            v_lowest := least(v_lowest, p_scores[i]);
            if v_lowest is null then
                v_lowest := p_scores[i];
            end if;
        end if;
    end loop;
    if not v_any then
        return null;
    end if;
    v_floor := v_lowest - greatest(abs(v_lowest) * 1e-9, 1e-9);
    for i in 1 .. v_n loop
        if v_dup[i] then
            v_scores[i] := least(p_scores[i], v_floor);
        end if;
    end loop;
    return v_scores;
end
$$;

comment on function memex._lowered_repeats(text[], double precision[]) is
    'Search''s best hits'' scores, repeated texts lowered below the distinct hits (null: none).';
