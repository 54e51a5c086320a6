-- privileges: tenant
-- memex.import_file_revisions: restore exported file revisions (memex.export_history's
-- 'file_revision' records: agent_id, user_id, path, memory_id, revision, operation, actor,
-- at, content, size, details) exactly as they were recorded, who and when included.
-- A revision whose (tenant, path, revision number) exists already is skipped, so an
-- import can be run again. Returns the number inserted. History is append-only for
-- tenants: only the operator or an admin key of each record's tenant may import it (a
-- write key cannot forge a revision). A security definer (owned by memex_owner:
-- row-level security still applies), as memex._record_revision is.
create or replace function memex.import_file_revisions(p_records jsonb)
returns integer
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_count integer;
begin
    perform memex._authorize_history(p_records, 'file revisions');
    insert into memex.file_revisions
        (agent_id, user_id, path, memory_id, revision, operation, actor, at, content, size,
         details)
    select r.agent_id, r.user_id, r.path, r.memory_id, r.revision, r.operation, r.actor,
           r.at, r.content, coalesce(r.size, coalesce(length(r.content), 0)),
           coalesce(r.details, '{}')
    from jsonb_array_elements(p_records) with ordinality e(value, ord),
         jsonb_populate_record(null::memex.file_revisions, e.value) r
    order by e.ord
    on conflict (agent_id, user_id, path, revision) do nothing;
    get diagnostics v_count = row_count;
    return v_count;
end
$$;

comment on function memex.import_file_revisions(jsonb) is
    'Insert exported file revisions as recorded (admin); existing revisions are skipped.';
