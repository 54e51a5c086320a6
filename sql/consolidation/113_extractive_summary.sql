-- privileges: service
-- memex._extractive_summary: an extractive summary of memories (p_contents, written at
-- p_times, oldest first) in at most p_max_chars, computed without a model:
--   1. units: a memory of up to 240 characters is one unit (a short fact is never cut);
--      a longer one is split into its sentences and lines, of which its first
--      greatest(4, 400 / memories) count (at most ~400 units a batch: step 2 compares
--      every pair, so 50 memories of 32,000 characters would otherwise keep a condense
--      run, and the locks it holds, busy for minutes);
--   2. near-duplicates go: of two units with the same words (lower case, punctuation and
--      spacing ignored) or with english lexeme sets at least 80% alike
--      (memex._lexemes_alike), only the later is kept, since it is the user's latest word
--      on the matter;
--   3. the most informative units are kept: ranked by the summed rarity of their
--      lexemes within the batch (ln(1 + units / units holding it)), taken while they fit;
--   4. the kept units come back in their original order, one line each, dated:
--      "Summary of 50 memories, 2026-01-03 to 2026-02-11:" then "- (2026-01-03) <unit>".
create or replace function memex._extractive_summary(
    p_contents text[], p_times timestamptz[], p_max_chars integer
)
returns text
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
declare
    v_header text := format('Summary of %s memories, %s to %s:', cardinality(p_contents),
                            to_char(p_times[1] at time zone 'UTC', 'YYYY-MM-DD'),
                            to_char(p_times[cardinality(p_times)] at time zone 'UTC',
                                    'YYYY-MM-DD'));
    v_room   integer := p_max_chars - length(v_header);
    v_ns     bigint[];
    v_lines  text[];
    v_kept   bigint[] := '{}';
    v_at     integer;
    v_units  integer := greatest(4, 400 / greatest(cardinality(p_contents), 1));
begin
    -- the units left after step 2, best first (step 3's order)
    with units as (
        select m.i::integer as i, s.j, regexp_replace(btrim(s.unit), '\s+', ' ', 'g') as unit
        from unnest(p_contents) with ordinality m(content, i)
        cross join lateral (
            select t.unit, t.j from regexp_split_to_table(m.content, '(?<=[.!?])\s+|\n+')
                                    with ordinality t(unit, j)
            where length(m.content) > 240 and t.j <= v_units
            union all
            select m.content, 1 where length(m.content) <= 240
        ) s
        where btrim(s.unit) <> ''
    ),
    numbered as (
        select row_number() over (order by u.i, u.j) as n, u.i, u.unit,
               lower(regexp_replace(u.unit, '[^[:alnum:]]+', ' ', 'g')) as words,
               tsvector_to_array(to_tsvector('english'::regconfig, u.unit)) as lexemes
        from units u
    ),
    kept as (
        select a.* from numbered a
        where not exists (
            select from numbered b
            where b.n > a.n
              and (b.words = a.words
                   or memex._lexemes_alike(
                          (select count(*) from unnest(a.lexemes) x where x = any (b.lexemes)),
                          cardinality(a.lexemes), cardinality(b.lexemes)))
        )
    ),
    rarity as (
        select l.lexeme, ln(1 + (select count(*) from kept)::double precision / count(*)) as w
        from kept k cross join lateral unnest(k.lexemes) l(lexeme)
        group by l.lexeme
    )
    select array_agg(k.n order by k.score desc, k.n),
           array_agg('- (' || to_char(p_times[k.i] at time zone 'UTC', 'YYYY-MM-DD') || ') '
                     || k.unit order by k.score desc, k.n)
    into v_ns, v_lines
    from (select k.*, coalesce((select sum(r.w) from rarity r where r.lexeme = any (k.lexemes)),
                               0) as score
          from kept k) k;
    for v_at in 1 .. coalesce(cardinality(v_ns), 0) loop
        continue when length(v_lines[v_at]) + 1 > v_room;
        v_room := v_room - length(v_lines[v_at]) - 1;
        v_kept := v_kept || v_ns[v_at];
    end loop;
    return v_header || coalesce((
        select string_agg(E'\n' || v_lines[a], '' order by v_ns[a])
        from generate_subscripts(v_ns, 1) a where v_ns[a] = any (v_kept)), '');
end
$$;

comment on function memex._extractive_summary(text[], timestamptz[], integer) is
    'Extractive summary of memories: near-duplicates dropped, the most informative units kept whole, in order.';
