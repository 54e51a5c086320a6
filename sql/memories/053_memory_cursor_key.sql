-- memex.memory_cursor_key: the (created_at, id) that a cursor of memex.memory_cursor
-- (a next_cursor of REST, MCP or Python) stands for, to pass to memex.list_memories as
-- p_cursor_created_at and p_cursor_id:
--   select m.* from memex.memory_cursor_key('1767225600000000.0f...') c,
--        memex.list_memories('agent', 'user', 50, c.created_at, c.id) m;
-- A null cursor gives one row of nulls (the first page); any other string than
-- "<1 to 16 digits, optionally negative>.<32 lowercase hex digits>" is MX422 `cursor`.
-- privileges: tenant
create or replace function memex.memory_cursor_key(p_cursor text)
returns table (created_at timestamptz, id uuid)
language plpgsql immutable parallel safe set search_path = pg_catalog, pg_temp
as $$
begin
    if p_cursor is null then
        return query select null::timestamptz, null::uuid;
        return;
    end if;
    if p_cursor !~ '^-?[0-9]{1,16}\.[0-9a-f]{32}$' then
        perform memex._invalid('cursor', 'is not a cursor this API returned (next_cursor of a page)');
    end if;
    return query
    select timestamptz '1970-01-01 00:00:00+00'
           + split_part(p_cursor, '.', 1)::bigint * interval '1 microsecond',
           split_part(p_cursor, '.', 2)::uuid;
end
$$;

comment on function memex.memory_cursor_key(text) is
    'The (created_at, id) of a list_memories cursor; MX422 cursor if malformed.';
