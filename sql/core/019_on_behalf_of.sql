-- privileges: service
-- memex._on_behalf_of: {"on_behalf_of": <caller>} while one of memexdb's own agents writes
-- for a caller (memex._delegate), else {}: merged into the details of revisions and
-- access-log entries, so both name the agent (actor) and whom it acted for.
create or replace function memex._on_behalf_of()
returns jsonb
language sql stable set search_path = pg_catalog, pg_temp
as $$
    select jsonb_strip_nulls(jsonb_build_object('on_behalf_of', memex._caller() ->> 'on_behalf_of'))
$$;

comment on function memex._on_behalf_of() is
    'The caller a delegated agent writes for, as {"on_behalf_of": ...} (else {}).';
