-- memex._unified_diff: the unified diff (3 lines of context) from p_old to p_new, the
-- text Python's difflib.unified_diff(old.splitlines(keepends=True),
-- new.splitlines(keepends=True), fromfile=p_from_file, tofile=p_to_file) joins to,
-- byte for byte: a port of difflib.SequenceMatcher (Ratcliff/Obershelp: the longest
-- matching block, then the same on each side of it), with its "autojunk" heuristic (in a
-- text of 200 lines or more, a line that makes up more than 1 % of the new text never
-- starts a match, it only extends one), the same line ends as str.splitlines (\n, \r\n,
-- \r, \v, \f, \x1c-\x1e, \x85, U+2028, U+2029) and the same output (a last line without
-- its line end runs into the next line of the diff, as difflib's does). Empty when the
-- texts have the same lines.
--
-- Bounded work: a file holds at most 32,768 characters, so at most 32,768 lines, and
-- autojunk caps the positions one line can match at 1 % of the lines + 1. The matching
-- counts the line comparisons it makes; past p_max_steps (default 1,000,000, about 1.5
-- seconds) it stops looking for matching blocks and shows each range not yet matched as
-- removed and added whole. The diff is then still correct (applying it gives p_new), only
-- longer than difflib's. Ordinary edits of a file make a few thousand comparisons.
-- privileges: tenant-helper
create or replace function memex._unified_diff(
    p_old text,
    p_new text,
    p_from_file text,
    p_to_file text,
    p_max_steps bigint default 1000000
)
returns text
language plpgsql immutable parallel safe set search_path = pg_catalog, pg_temp
as $$
declare
    -- one line as str.splitlines(keepends=True) cuts it: up to and with its line end
    c_line constant text :=
        '[^\n\r\u000b\u000c\u001c-\u001e\u0085\u2028\u2029]*'
        '(?:\r\n|[\n\r\u000b\u000c\u001c-\u001e\u0085\u2028\u2029])'
        '|[^\n\r\u000b\u000c\u001c-\u001e\u0085\u2028\u2029]+';
    v_a      text[];   -- old lines, v_a[i + 1] is line i (0-based indexes as in difflib)
    v_b      text[];
    v_la     integer;
    v_lb     integer;
    v_ia     integer[];  -- line ids (equal lines, equal ids)
    v_ib     integer[];
    v_start  integer[];  -- b2j: positions in b of line id x are v_pos[v_start[x] ..
    v_count  integer[];  --      v_start[x] + v_count[x] - 1], ascending
    v_pos    integer[];
    v_ids    integer;
    v_val    integer[];  -- j2len of the row before (j at index j + 1), valid where
    v_stamp  bigint[];   -- v_stamp holds that row's stamp
    v_next   bigint := 0;
    v_base   bigint;
    v_s      bigint;
    v_steps  bigint := 0;
    q_alo    integer[] := array[0];  -- the queue of ranges to match
    q_ahi    integer[];
    q_blo    integer[] := array[0];
    q_bhi    integer[];
    v_qn     integer := 1;
    m_i      integer[] := '{}';  -- matching blocks
    m_j      integer[] := '{}';
    m_k      integer[] := '{}';
    v_alo    integer; v_ahi integer; v_blo integer; v_bhi integer;
    v_besti  integer; v_bestj integer; v_best integer;
    v_i      integer; v_j integer; v_k integer; v_t integer; v_x integer;
    v_prevj  integer; v_saved integer; v_old integer;
    v_blocks record;
    v_ci     integer; v_cj integer; v_ck integer;  -- collapsing adjacent blocks
    b_i      integer[] := '{}'; b_j integer[] := '{}'; b_k integer[] := '{}';
    o_tag    text[] := '{}';  -- opcodes
    o_i1     integer[] := '{}'; o_i2 integer[] := '{}';
    o_j1     integer[] := '{}'; o_j2 integer[] := '{}';
    v_n      integer; v_tag text; v_i1 integer; v_i2 integer; v_j1 integer; v_j2 integer;
    g_tag    text[]; g_i1 integer[]; g_i2 integer[]; g_j1 integer[]; g_j2 integer[];
    v_out    text[] := '{}';
    v_g      integer;
begin
    select coalesce(array_agg(m[1] order by o), '{}') into v_a
    from regexp_matches(coalesce(p_old, ''), '(' || c_line || ')', 'g') with ordinality x(m, o);
    select coalesce(array_agg(m[1] order by o), '{}') into v_b
    from regexp_matches(coalesce(p_new, ''), '(' || c_line || ')', 'g') with ordinality x(m, o);
    v_la := cardinality(v_a);
    v_lb := cardinality(v_b);
    q_ahi := array[v_la];
    q_bhi := array[v_lb];

    -- line ids: equal lines (byte for byte) share one
    with l as (
        select 0 as side, o, line from unnest(v_a) with ordinality u(line, o)
        union all
        select 1, o, line from unnest(v_b) with ordinality u(line, o)
    ), r as (
        select side, o, dense_rank() over (order by line collate "C")::integer as id from l
    )
    select coalesce(array_agg(id order by o) filter (where side = 0), '{}'),
           coalesce(array_agg(id order by o) filter (where side = 1), '{}'),
           coalesce(max(id), 0)
    into v_ia, v_ib, v_ids
    from r;

    -- b2j without the popular lines (autojunk: 200 lines or more, more than 1 % + 1)
    v_start := array_fill(1, array[greatest(v_ids, 1)]);
    v_count := array_fill(0, array[greatest(v_ids, 1)]);
    with p as (
        select id, j - 1 as j, count(*) over (partition by id) as n
        from unnest(v_ib) with ordinality u(id, j)
    )
    select coalesce(array_agg(j order by id, j), '{}') into v_pos
    from p where v_lb < 200 or n <= v_lb / 100 + 1;
    v_t := 1;
    for v_x, v_k in
        select id, count(*)::integer from unnest(v_ib) u(id)
        group by id having v_lb < 200 or count(*) <= v_lb / 100 + 1 order by id
    loop
        v_start[v_x] := v_t;
        v_count[v_x] := v_k;
        v_t := v_t + v_k;
    end loop;
    v_val := array_fill(0, array[greatest(v_lb, 1)]);
    v_stamp := array_fill(0::bigint, array[greatest(v_lb, 1)]);

    -- get_matching_blocks: find_longest_match on each range still to match
    while v_qn > 0 loop
        v_alo := q_alo[v_qn]; v_ahi := q_ahi[v_qn];
        v_blo := q_blo[v_qn]; v_bhi := q_bhi[v_qn];
        v_qn := v_qn - 1;
        if v_steps > p_max_steps then
            continue;  -- over budget: this range stays unmatched (a replace)
        end if;
        v_besti := v_alo; v_bestj := v_blo; v_best := 0;
        v_base := v_next + 1;
        for v_i in v_alo .. v_ahi - 1 loop
            exit when v_steps > p_max_steps;  -- the best block so far is a true match
            v_s := v_base + (v_i - v_alo) + 1;
            v_x := v_ia[v_i + 1];
            if v_x <= v_ids and v_count[v_x] > 0 then
                v_prevj := -2;
                v_saved := 0;
                for v_t in v_start[v_x] .. v_start[v_x] + v_count[v_x] - 1 loop
                    v_j := v_pos[v_t];
                    continue when v_j < v_blo;
                    exit when v_j >= v_bhi;
                    v_steps := v_steps + 1;
                    -- j2len[j - 1] of the row before
                    if v_prevj = v_j - 1 then
                        v_old := v_saved;
                    elsif v_j > 0 and v_stamp[v_j] = v_s - 1 then
                        v_old := v_val[v_j];
                    else
                        v_old := 0;
                    end if;
                    v_saved := case when v_stamp[v_j + 1] = v_s - 1 then v_val[v_j + 1] else 0 end;
                    v_k := v_old + 1;
                    v_val[v_j + 1] := v_k;
                    v_stamp[v_j + 1] := v_s;
                    v_prevj := v_j;
                    if v_k > v_best then
                        v_besti := v_i - v_k + 1; v_bestj := v_j - v_k + 1; v_best := v_k;
                    end if;
                end loop;
            end if;
        end loop;
        v_next := v_base + (v_ahi - v_alo) + 1;
        -- extend the match with equal lines (the popular ones)
        while v_besti > v_alo and v_bestj > v_blo and v_ia[v_besti] = v_ib[v_bestj] loop
            v_besti := v_besti - 1; v_bestj := v_bestj - 1; v_best := v_best + 1;
        end loop;
        while v_besti + v_best < v_ahi and v_bestj + v_best < v_bhi
              and v_ia[v_besti + v_best + 1] = v_ib[v_bestj + v_best + 1] loop
            v_best := v_best + 1;
        end loop;
        if v_best > 0 then
            m_i := m_i || v_besti; m_j := m_j || v_bestj; m_k := m_k || v_best;
            if v_alo < v_besti and v_blo < v_bestj then
                v_qn := v_qn + 1;
                q_alo[v_qn] := v_alo; q_ahi[v_qn] := v_besti;
                q_blo[v_qn] := v_blo; q_bhi[v_qn] := v_bestj;
            end if;
            if v_besti + v_best < v_ahi and v_bestj + v_best < v_bhi then
                v_qn := v_qn + 1;
                q_alo[v_qn] := v_besti + v_best; q_ahi[v_qn] := v_ahi;
                q_blo[v_qn] := v_bestj + v_best; q_bhi[v_qn] := v_bhi;
            end if;
        end if;
    end loop;

    -- sorted, adjacent blocks joined, then the sentinel (la, lb, 0)
    v_ci := 0; v_cj := 0; v_ck := 0;
    for v_blocks in select * from unnest(m_i, m_j, m_k) u(i, j, k) order by i, j, k loop
        if v_ci + v_ck = v_blocks.i and v_cj + v_ck = v_blocks.j then
            v_ck := v_ck + v_blocks.k;
        else
            if v_ck > 0 then
                b_i := b_i || v_ci; b_j := b_j || v_cj; b_k := b_k || v_ck;
            end if;
            v_ci := v_blocks.i; v_cj := v_blocks.j; v_ck := v_blocks.k;
        end if;
    end loop;
    if v_ck > 0 then
        b_i := b_i || v_ci; b_j := b_j || v_cj; b_k := b_k || v_ck;
    end if;
    b_i := b_i || v_la; b_j := b_j || v_lb; b_k := b_k || 0;

    -- get_opcodes
    v_i := 0; v_j := 0;
    for v_t in 1 .. cardinality(b_i) loop
        v_tag := case when v_i < b_i[v_t] and v_j < b_j[v_t] then 'replace'
                      when v_i < b_i[v_t] then 'delete'
                      when v_j < b_j[v_t] then 'insert' end;
        if v_tag is not null then
            o_tag := o_tag || v_tag; o_i1 := o_i1 || v_i; o_i2 := o_i2 || b_i[v_t];
            o_j1 := o_j1 || v_j; o_j2 := o_j2 || b_j[v_t];
        end if;
        v_i := b_i[v_t] + b_k[v_t]; v_j := b_j[v_t] + b_k[v_t];
        if b_k[v_t] > 0 then
            o_tag := o_tag || 'equal'::text; o_i1 := o_i1 || b_i[v_t]; o_i2 := o_i2 || v_i;
            o_j1 := o_j1 || b_j[v_t]; o_j2 := o_j2 || v_j;
        end if;
    end loop;

    -- get_grouped_opcodes(3), each group written out as unified_diff does
    v_n := cardinality(o_tag);
    if v_n = 0 then
        return '';  -- both empty
    end if;
    if o_tag[1] = 'equal' then
        o_i1[1] := greatest(o_i1[1], o_i2[1] - 3); o_j1[1] := greatest(o_j1[1], o_j2[1] - 3);
    end if;
    if o_tag[v_n] = 'equal' then
        o_i2[v_n] := least(o_i2[v_n], o_i1[v_n] + 3); o_j2[v_n] := least(o_j2[v_n], o_j1[v_n] + 3);
    end if;
    g_tag := '{}'; g_i1 := '{}'; g_i2 := '{}'; g_j1 := '{}'; g_j2 := '{}';
    for v_t in 1 .. v_n + 1 loop
        if v_t <= v_n then
            v_tag := o_tag[v_t]; v_i1 := o_i1[v_t]; v_i2 := o_i2[v_t];
            v_j1 := o_j1[v_t]; v_j2 := o_j2[v_t];
        end if;
        if v_t > v_n or (v_tag = 'equal' and v_i2 - v_i1 > 6) then
            if v_t <= v_n then
                g_tag := g_tag || v_tag; g_i1 := g_i1 || v_i1;
                g_i2 := g_i2 || least(v_i2, v_i1 + 3);
                g_j1 := g_j1 || v_j1; g_j2 := g_j2 || least(v_j2, v_j1 + 3);
            end if;
            -- yield the group (at the end only when it is not one 'equal')
            if cardinality(g_tag) > 0
               and (v_t <= v_n or not (cardinality(g_tag) = 1 and g_tag[1] = 'equal')) then
                if cardinality(v_out) = 0 then
                    v_out := array['--- ' || p_from_file || E'\n', '+++ ' || p_to_file || E'\n'];
                end if;
                v_g := cardinality(g_tag);
                v_out := v_out || format(E'@@ -%s +%s @@\n',
                    case when g_i2[v_g] - g_i1[1] = 1 then (g_i1[1] + 1)::text
                         else (g_i1[1] + case when g_i2[v_g] = g_i1[1] then 0 else 1 end)
                              || ',' || (g_i2[v_g] - g_i1[1]) end,
                    case when g_j2[v_g] - g_j1[1] = 1 then (g_j1[1] + 1)::text
                         else (g_j1[1] + case when g_j2[v_g] = g_j1[1] then 0 else 1 end)
                              || ',' || (g_j2[v_g] - g_j1[1]) end);
                for v_x in 1 .. v_g loop
                    if g_tag[v_x] = 'equal' then
                        v_out := v_out || array(select ' ' || l from unnest(v_a[g_i1[v_x] + 1 : g_i2[v_x]]) with ordinality u(l, o) order by o);
                    else
                        if g_tag[v_x] in ('replace', 'delete') then
                            v_out := v_out || array(select '-' || l from unnest(v_a[g_i1[v_x] + 1 : g_i2[v_x]]) with ordinality u(l, o) order by o);
                        end if;
                        if g_tag[v_x] in ('replace', 'insert') then
                            v_out := v_out || array(select '+' || l from unnest(v_b[g_j1[v_x] + 1 : g_j2[v_x]]) with ordinality u(l, o) order by o);
                        end if;
                    end if;
                end loop;
            end if;
            exit when v_t > v_n;
            g_tag := '{}'; g_i1 := '{}'; g_i2 := '{}'; g_j1 := '{}'; g_j2 := '{}';
            v_i1 := greatest(v_i1, v_i2 - 3); v_j1 := greatest(v_j1, v_j2 - 3);
        end if;
        g_tag := g_tag || v_tag; g_i1 := g_i1 || v_i1; g_i2 := g_i2 || v_i2;
        g_j1 := g_j1 || v_j1; g_j2 := g_j2 || v_j2;
    end loop;
    return array_to_string(v_out, '');
end
$$;

comment on function memex._unified_diff(text, text, text, text, bigint) is
    'Unified diff of two texts by lines, as Python difflib.unified_diff writes it.';
