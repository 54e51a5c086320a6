-- privileges: tenant-helper
-- memex._apply_patch: a file's content after a patch, or MX422 naming what is wrong (the
-- file is never partly changed). Exactly one of two forms:
--   * append: p_append added at the end of the section under the markdown heading
--     p_heading (a line such as '## Preferences'; without leading '#' it means '## '
--     || p_heading), the section ending at the next heading of the same or a higher level;
--     a heading that is absent is added at the end of the file; one that appears twice is
--     ambiguous (field heading). Without p_heading the text goes at the end of the file.
--     p_content null (no file yet) starts from nothing.
--   * replace: the one occurrence of p_old_text becomes p_new_text (MX404 without a file).
-- The arguments are checked first (MX422). A patch that does not apply to the file as it
-- is now (old_text absent or repeated, a heading found twice, a result that would be
-- blank or over 32768 characters) is SQLSTATE MX409, as a stale base revision is: the
-- request is well-formed, the file's current state conflicts with it.
create or replace function memex._apply_patch(
    p_content text, p_heading text, p_append text, p_old_text text, p_new_text text
)
returns text
language plpgsql immutable set search_path = pg_catalog, pg_temp
as $$
declare
    v_content text := coalesce(p_content, '');
    v_heading text;
    v_level   integer;
    v_lines   text[];
    v_at      integer[];
    v_end     integer;
    v_i       integer;
    v_count   integer;
    v_body    text;
begin
    if (p_append is null) = (p_old_text is null) then
        perform memex._invalid('patch', 'give either append (with an optional heading)'
                                        ' or old_text and new_text');
    end if;
    if p_old_text is not null then
        if p_new_text is null then
            perform memex._invalid('new_text', 'is required with old_text');
        end if;
        if p_heading is not null then
            perform memex._invalid('heading', 'is only for append');
        end if;
        if p_old_text = '' then
            perform memex._invalid('old_text', 'must not be empty');
        end if;
        if p_content is null then
            raise exception 'file not found' using errcode = 'MX404';
        end if;
        v_count := (length(v_content) - length(replace(v_content, p_old_text, '')))
                   / length(p_old_text);
        if v_count = 0 then
            raise exception 'old_text: was not found in the file' using errcode = 'MX409';
        end if;
        if v_count > 1 then
            raise exception 'old_text: appears % times in the file; include more context to'
                            ' make it unique', v_count using errcode = 'MX409';
        end if;
        return memex._patched(replace(v_content, p_old_text, p_new_text));
    end if;
    if p_new_text is not null then
        perform memex._invalid('new_text', 'is only for replacing old_text');
    end if;
    if btrim(p_append, E' \t\n\r\f\x0b') = '' then
        perform memex._invalid('append', 'must contain a non-whitespace character');
    end if;
    v_body := rtrim(p_append, E'\n');
    if p_heading is null then
        if v_content = '' then
            return memex._patched(v_body || E'\n');
        end if;
        return memex._patched(rtrim(v_content, E'\n') || E'\n' || v_body || E'\n');
    end if;
    if p_heading !~ '^(#{1,6} +)?[^\s#][^\n\r]*$' or length(p_heading) > 200 then
        perform memex._invalid('heading', 'must be one line of heading text (e.g. ## Notes),'
                                          ' at most 200 characters');
    end if;
    v_heading := rtrim(p_heading);
    if v_heading !~ '^#' then
        v_heading := '## ' || v_heading;
    end if;
    v_level := length(substring(v_heading from '^#+'));
    v_lines := string_to_array(rtrim(v_content, E'\n'), E'\n');
    select coalesce(array_agg(n order by n), '{}') into v_at
    from generate_subscripts(v_lines, 1) n
    where rtrim(v_lines[n]) = v_heading;
    if cardinality(v_at) > 1 then
        raise exception 'heading: appears % times in the file', cardinality(v_at)
            using errcode = 'MX409';
    end if;
    if cardinality(v_at) = 0 then
        if v_content !~ '\S' then
            return memex._patched(v_heading || E'\n\n' || v_body || E'\n');
        end if;
        return memex._patched(rtrim(v_content, E'\n') || E'\n\n' || v_heading || E'\n\n'
                              || v_body || E'\n');
    end if;
    -- the section runs to the line before the next heading of level <= v_level
    v_end := cardinality(v_lines);
    for v_i in v_at[1] + 1 .. cardinality(v_lines) loop
        if v_lines[v_i] ~ ('^#{1,' || v_level || '} ') then
            v_end := v_i - 1;
            exit;
        end if;
    end loop;
    -- before the blank lines that end the section
    while v_end > v_at[1] and btrim(v_lines[v_end]) = '' loop
        v_end := v_end - 1;
    end loop;
    return memex._patched(array_to_string(v_lines[1:v_end] || string_to_array(v_body, E'\n')
                                          || v_lines[v_end + 1:cardinality(v_lines)], E'\n')
                          || E'\n');
end
$$;

comment on function memex._apply_patch(text, text, text, text, text) is
    'A file''s content after appending under a heading or replacing one exact text (MX422 if not possible).';
