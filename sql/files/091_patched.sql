-- privileges: tenant-helper
-- memex._patched: a patch's result, or MX409 if it cannot be the file's content (blank,
-- or over memex._content_max_chars()): the patch was well-formed, the file's state conflicts.
create or replace function memex._patched(p_content text)
returns text
language plpgsql immutable set search_path = pg_catalog, pg_temp
as $$
begin
    if btrim(p_content, E' \t\n\r\f\x0b') = '' then
        raise exception 'the patched file would be blank: delete it instead' using errcode = 'MX409';
    end if;
    if length(p_content) > memex._content_max_chars() then
        raise exception 'the patched file would be % characters, over %', length(p_content),
                        memex._content_max_chars()
            using errcode = 'MX409';
    end if;
    return p_content;
end
$$;

comment on function memex._patched(text) is
    'A patch''s result, or MX409 if it would be blank or over the content bound.';
