-- memex.tenant_cursor_key: the (agent_id, user_id) a cursor of memex.tenant_cursor stands
-- for (p_after_agent_id, p_after_user_id of memex.dream_users). A null cursor gives one
-- row of nulls (the first page); a string of another shape, or whose bytes are not
-- UTF-8, is MX422 `after` (Python's decoder replaces such bytes instead: memexdb never
-- writes them).
-- privileges: tenant
create or replace function memex.tenant_cursor_key(p_cursor text)
returns table (agent_id text, user_id text)
language plpgsql immutable parallel safe set search_path = pg_catalog, pg_temp
as $$
begin
    if p_cursor is null then
        return query select null::text, null::text;
        return;
    end if;
    -- each part 1 to 1024 bytes, none of them NUL (PostgreSQL's regular expressions
    -- bound a repetition at 255, hence the length test)
    if p_cursor !~ '^(?:[1-9a-f][0-9a-f]|0[1-9a-f])+\.(?:[1-9a-f][0-9a-f]|0[1-9a-f])+$'
       or length(split_part(p_cursor, '.', 1)) > 2048
       or length(split_part(p_cursor, '.', 2)) > 2048 then
        perform memex._invalid('after', 'is not a cursor this API returned (next_after of a page)');
    end if;
    begin
        return query
        select convert_from(decode(split_part(p_cursor, '.', 1), 'hex'), 'UTF8'),
               convert_from(decode(split_part(p_cursor, '.', 2), 'hex'), 'UTF8');
    exception when character_not_in_repertoire or untranslatable_character then
        perform memex._invalid('after', 'is not a cursor this API returned (not UTF-8)');
    end;
end
$$;

comment on function memex.tenant_cursor_key(text) is
    'The (agent_id, user_id) of a tenant cursor; MX422 after if malformed.';
