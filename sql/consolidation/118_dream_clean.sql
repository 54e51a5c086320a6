-- privileges: service
-- memex._dream_clean: a file's content tidied the way a dream tidies it, without a model:
--   1. repeated headings merge: a markdown heading (same level, same text ignoring case and
--      spacing) that appears again under the same parent section is one section: the
--      later occurrences' bodies (subsections included, which merge the same way) move
--      under the first, in order, and the repeated heading lines go. Headings under
--      different parents (## Notes under # Alice and under # Bob) stay apart;
--   2. duplicate lines go: two lines are duplicates when they are equal after lower-casing,
--      collapsing whitespace, dropping a list marker (-, *, +, 1. or 1)) and trailing
--      punctuation; the first occurrence, in the merged order, is kept. Near-duplicates
--      (other words, english lexeme sets alike by memex._lexemes_alike, the rule condensing
--      uses) merge too: the later wording stays, the user's latest word ("- Prefers tea
--      in the morning" goes for a later "- prefers morning teas"). Never removed:
--      blank lines, headings, lines inside fenced code blocks, indented lines (a nested
--      item means something only under its parent) and lines without a letter or digit
--      (rules such as ---, table separators);
--   3. blank lines that only separated what went are dropped, so no gaps are left.
-- Nothing else changes: content without duplicates or repeated headings comes back
-- byte for byte, and tidying tidied content changes nothing. A file whose code fence is
-- never closed keeps its sections where they are (moving one would move the fence).
-- lines_removed counts duplicate lines, headings_merged repeated heading lines; removed
-- holds the removed lines (at most 20, each cut at 200 characters) for the run's details.
create or replace function memex._dream_clean(
    p_content text,
    out content text,
    out lines_removed integer,
    out headings_merged integer,
    out removed text[]
)
language plpgsql immutable set search_path = pg_catalog, pg_temp
as $$
declare
    v_lines   text[] := string_to_array(p_content, E'\n');
    v_newline boolean := right(p_content, 1) = E'\n';
    -- per line: kind (b blank, h heading, H repeated heading, c code, t a line that may be
    -- a duplicate, k kept as it is), duplicate key, merged section (node) and occurrence
    v_kind    text[] := '{}';
    v_key     text[] := '{}';
    v_node    integer[] := '{}';
    v_occ     integer[] := '{}';
    -- per merged section (node 1: the text before the first heading): its sort key (the
    -- first lines of it and its ancestors, so that sorting on it lays the tree out in
    -- order of first appearance) and how often its heading appears
    v_sort    text[] := array[''];
    v_count   integer[] := array[1];
    v_names   text[] := array[''];  -- per node: its parent node / level text
    v_twice   text[];  -- level and text of the headings that appear more than once
    v_levels  integer[] := '{}';  -- the open headings: levels and nodes
    v_nodes   integer[] := '{}';
    v_depth   integer := 0;
    v_current integer := 1;
    v_fence   text;  -- the open code fence (``` or ~~~, maybe longer), null outside code
    v_merge   boolean;
    v_line    text;
    v_match   text[];
    v_level   integer;
    v_name    text;
    v_parent  integer;
    v_id      integer;
    v_i       integer;
    v_out     text[];
    v_outkind text[];
    v_dup     boolean[];
    v_result  text[] := '{}';
    v_n       integer := 0;
    v_gap     boolean := false;  -- a line was removed since the last line kept
begin
    if v_newline then
        v_lines := v_lines[1:cardinality(v_lines) - 1];
    end if;
    -- keys only for the lines that may be duplicates, but aligned with v_lines from line 1
    v_key := array_fill(null::text, array[coalesce(cardinality(v_lines), 0)]);
    -- only these can repeat, so only they are looked up (a lookup costs a scan of v_names)
    select coalesce(array_agg(h.name), '{}') into v_twice
    from (select length(m[1]) || ' ' || lower(btrim(regexp_replace(
                     regexp_replace(m[2], '[ \t]+#+\s*$', ''), '\s+', ' ', 'g'))) as name
          from unnest(v_lines) x(line)
          cross join lateral regexp_match(x.line, '^ {0,3}(#{1,6})[ \t]+(\S.*)$') m
          group by 1 having count(*) > 1) h;
    content := p_content;
    lines_removed := 0;
    headings_merged := 0;
    removed := '{}';
    for v_i in 1 .. coalesce(cardinality(v_lines), 0) loop
        v_line := v_lines[v_i];
        v_node[v_i] := v_current;
        v_occ[v_i] := v_count[v_current];
        if v_fence is not null then
            v_kind[v_i] := 'c';
            if v_line ~ ('^ {0,3}' || left(v_fence, 1) || '{' || length(v_fence) || ',}\s*$') then
                v_fence := null;
            end if;
            continue;
        end if;
        v_match := regexp_match(v_line, '^ {0,3}(`{3,}|~{3,})');
        if v_match is not null then
            v_fence := v_match[1];
            v_kind[v_i] := 'c';
            continue;
        end if;
        v_match := regexp_match(v_line, '^ {0,3}(#{1,6})[ \t]+(\S.*)$');
        if v_match is not null then
            v_level := length(v_match[1]);
            -- the text without a closing run of #s, case and spacing ignored
            v_name := v_level || ' ' || lower(btrim(regexp_replace(
                regexp_replace(v_match[2], '[ \t]+#+\s*$', ''), '\s+', ' ', 'g')));
            while v_depth > 0 and v_levels[v_depth] >= v_level loop
                v_depth := v_depth - 1;
            end loop;
            v_parent := case when v_depth = 0 then 1 else v_nodes[v_depth] end;
            v_id := case when v_name = any (v_twice)
                         then array_position(v_names, v_parent || '/' || v_name) end;
            v_name := v_parent || '/' || v_name;
            if v_id is null then
                v_id := cardinality(v_sort) + 1;
                v_sort[v_id] := v_sort[v_parent] || lpad(v_i::text, 6, '0') || '.';
                v_count[v_id] := 1;
                v_names[v_id] := v_name;
                v_kind[v_i] := 'h';
            else
                v_count[v_id] := v_count[v_id] + 1;
                v_kind[v_i] := 'H';
            end if;
            v_depth := v_depth + 1;
            v_levels[v_depth] := v_level;
            v_nodes[v_depth] := v_id;
            v_current := v_id;
            v_node[v_i] := v_id;
            v_occ[v_i] := v_count[v_id];
            continue;
        end if;
        if v_line ~ '^\s*$' then
            v_kind[v_i] := 'b';
        elsif v_line ~ '^\s' then
            v_kind[v_i] := 'k';
        else
            v_key[v_i] := btrim(regexp_replace(regexp_replace(
                lower(regexp_replace(v_line, '\s+', ' ', 'g')),
                '^([-*+]|[0-9]+[.)]) ', ''), '[[:punct:][:space:]]+$', ''));
            v_kind[v_i] := case when v_key[v_i] ~ '[[:alnum:]]' then 't' else 'k' end;
        end if;
    end loop;
    v_merge := v_fence is null;
    if not v_merge then
        v_kind := array_replace(v_kind, 'H', 'h');
    end if;
    -- lay the lines out (merged sections in order of first appearance, each with the bodies
    -- of all its occurrences, then its subsections) and mark the duplicates
    with l as (
        select u.i, u.line, u.kind, u.key, u.node, u.occ,
               case when v_merge then v_sort[u.node] else '' end as sk,
               v_merge and v_count[u.node] > 1 as multi
        from unnest(v_lines, v_kind, v_key, v_node, v_occ)
             with ordinality u(line, kind, key, node, occ, i)
    ),
    g as (
        select l.*,
               min(l.i) filter (where l.kind not in ('b', 'h', 'H')) over w as core_min,
               max(l.i) filter (where l.kind not in ('b', 'h', 'H')) over w as core_max
        from l
        window w as (partition by l.node, l.occ)
    ),
    p as (
        -- a merged section keeps the blank lines around its first body (the ones after it
        -- go after the last body moved in); those around a moved body go
        select g.*,
               g.kind = 'H' or (g.multi and g.kind = 'b' and g.occ > 1
                                and (g.core_min is null or g.i < g.core_min
                                     or g.i > g.core_max)) as dropped,
               g.multi and g.kind = 'b' and g.occ = 1
                   and (g.core_max is null or g.i > g.core_max) as late
        from g
    ),
    o as (
        select p.*, row_number() over (order by p.sk collate "C", p.late, p.i) as pos
        from p where not p.dropped
    ),
    lexemes as (
        select o.pos, o.key,
               tsvector_to_array(to_tsvector('english'::regconfig, o.key)) as lexemes
        from o where o.kind = 't'
    ),
    each_lexeme as (
        select x.pos, x.key, cardinality(x.lexemes) as n, l.lexeme
        from lexemes x cross join lateral unnest(x.lexemes) l(lexeme)
    ),
    -- the lines with a near-duplicate later in the file (other words): the later wording
    -- stays
    superseded as (
        select distinct a.pos
        from each_lexeme a
        join each_lexeme b on b.lexeme = a.lexeme and b.pos > a.pos and b.key <> a.key
        group by a.pos, b.pos, a.n, b.n
        having memex._lexemes_alike(count(*), a.n, b.n)
    ),
    d as (
        select o.pos, o.line, o.kind,
               o.kind = 't' and (row_number() over (partition by o.key order by o.pos) > 1
                                 or o.pos in (select s.pos from superseded s)) as dup
        from o
    )
    select array_agg(d.line order by d.pos), array_agg(d.kind order by d.pos),
           array_agg(d.dup order by d.pos)
    into v_out, v_outkind, v_dup
    from d;
    headings_merged := cardinality(array_positions(v_kind, 'H'));
    lines_removed := coalesce(cardinality(array_positions(v_dup, true)), 0);
    if lines_removed = 0 and headings_merged = 0 then
        return;  -- nothing to tidy: the content as it was, byte for byte
    end if;
    for v_i in 1 .. coalesce(cardinality(v_out), 0) loop
        if v_dup[v_i] then
            if cardinality(removed) < 20 then
                removed := removed || left(v_out[v_i], 200);
            end if;
            v_gap := true;
            continue;
        end if;
        -- a blank line right after a removed one, after a blank line or at the top: the gap
        -- the removed line leaves
        continue when v_outkind[v_i] = 'b' and v_gap
                      and (v_n = 0 or v_result[v_n] ~ '^\s*$');
        v_n := v_n + 1;
        v_result[v_n] := v_out[v_i];
        v_gap := false;
    end loop;
    -- blank lines left at the end (a merged section's separator, a removed last line)
    while v_n > 0 and v_result[v_n] ~ '^\s*$' loop
        v_n := v_n - 1;
    end loop;
    content := array_to_string(v_result[1:v_n], E'\n')
               || case when v_newline then E'\n' else '' end;
end
$$;

comment on function memex._dream_clean(text) is
    'A file''s content with repeated headings merged and duplicate lines removed (no model).';
