-- privileges: tenant-helper
-- memex._invalid: raise the "invalid argument" error (SQLSTATE MX422) naming the field.
-- Clients map MX422 to HTTP 422 / an MCP tool error, reading the field from COLUMN.
create or replace function memex._invalid(p_field text, p_message text)
returns void
language plpgsql volatile set search_path = pg_catalog, pg_temp
as $$
begin
    raise exception '%: %', p_field, p_message
        using errcode = 'MX422', column = p_field;
end
$$;

comment on function memex._invalid(text, text) is
    'Raise SQLSTATE MX422 (invalid argument) with the field name in COLUMN.';
