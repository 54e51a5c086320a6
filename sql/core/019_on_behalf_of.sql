-- privileges: service
-- memex._on_behalf_of: {"on_behalf_of": <caller>} while one of memexdb's own agents writes
-- for a caller (memex._delegate), else {}: merged into the details of revisions and
-- access-log entries, so both name the agent (actor) and whom it acted for. Inlined where
-- it is called (no SET, every name qualified): the revision triggers evaluate it in every
-- write.
create or replace function memex._on_behalf_of()
returns jsonb
language sql stable
as $$
    select pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
        'on_behalf_of', memex._caller() operator(pg_catalog.->>) 'on_behalf_of'))
$$;

comment on function memex._on_behalf_of() is
    'The caller a delegated agent writes for, as {"on_behalf_of": ...} (else {}).';
