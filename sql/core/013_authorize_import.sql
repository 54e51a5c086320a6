-- privileges: service
-- memex._authorize_import: the prologue of the memex.import_* functions that keep every
-- record they are given (access-log entries, consolidation runs): memex._authorize_history
-- (a JSON array of records, and the caller admin of each record's tenant), then
-- memex._check_imported_actor on each record's actor, in the order given, naming the
-- record (records[<index from 0>].actor) in the error. p_what names the records as
-- memex._authorize_history does. (The imports of file and memory revisions check the
-- actors of only the records not there yet, after their own deduplication.)
create or replace function memex._authorize_import(p_records jsonb, p_what text)
returns void
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
begin
    perform memex._authorize_history(p_records, p_what);
    perform memex._check_imported_actor(e.value ->> 'agent_id', e.value ->> 'actor',
                                        format('records[%s].actor', e.ord - 1))
    from jsonb_array_elements(p_records) with ordinality e(value, ord) order by e.ord;
end
$$;

comment on function memex._authorize_import(jsonb, text) is
    'Raise unless the caller is admin of each record''s tenant and may name each actor.';
