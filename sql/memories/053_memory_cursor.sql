-- memex.memory_cursor: the opaque page cursor of memex.list_memories that REST, MCP and
-- Python hand out as next_cursor: the (created_at, id) of a page's last memory written
-- as "<microseconds since 1970 UTC>.<id as 32 hex digits>". A page of p_limit rows is
-- followed by another: its cursor is memex.memory_cursor of the last row; a shorter page
-- is the last. memex.memory_cursor_key reads a cursor back.
-- privileges: tenant
create or replace function memex.memory_cursor(p_created_at timestamptz, p_id uuid)
returns text
language sql immutable strict parallel safe set search_path = pg_catalog, pg_temp
as $$
    select floor(extract(epoch from p_created_at) * 1000000)::bigint::text
           || '.' || replace(p_id::text, '-', '')
$$;

comment on function memex.memory_cursor(timestamptz, uuid) is
    'The opaque list_memories cursor after a memory: "<epoch microseconds>.<id hex>".';
