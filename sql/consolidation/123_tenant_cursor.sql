-- memex.tenant_cursor: the opaque page cursor of the tenant listings that REST hands
-- out as next_after (GET /v1/dream/users): "<agent_id as UTF-8 hex>.<user_id as UTF-8
-- hex>". A page of p_limit rows is followed by another, after its last tenant;
-- memex.tenant_cursor_key reads a cursor back into the p_after_agent_id and
-- p_after_user_id of memex.dream_users.
-- privileges: tenant
create or replace function memex.tenant_cursor(p_agent_id text, p_user_id text)
returns text
language sql immutable strict parallel safe set search_path = pg_catalog, pg_temp
as $$
    select encode(convert_to(p_agent_id, 'UTF8'), 'hex') || '.'
           || encode(convert_to(p_user_id, 'UTF8'), 'hex')
$$;

comment on function memex.tenant_cursor(text, text) is
    'The opaque cursor after tenant (agent_id, user_id): hex of each, joined by a dot.';
