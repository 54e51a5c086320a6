-- Who may use what, re-applied after every migrate (a test reads it back). Nothing is
-- granted to PUBLIC. memex_app is the service: it enters a caller per transaction
-- (memex._enter) and may run every function, the operator's and the scheduled jobs'
-- included. memex_tenant is the group of login roles bound to one tenant for direct SQL
-- (memex.bind_sql_role): the tenant API, the read-only helpers it runs as its caller, and
-- the tenant tables under row-level security. API keys, SQL role bindings, the audit log,
-- the lock secret and the rate-limit counters are reached only through security definer
-- functions. memex_owner (no login, no BYPASSRLS) owns the tables and every security
-- definer function, so row-level security (forced on the tenant tables) still applies
-- inside them: a definer function is a second wall, not a door.
--
-- History is evidence: file revisions, the access log, consolidation runs and the audit
-- log are append-only for every caller. They are written only by the functions that make
-- the change (the file functions, consolidation, dreaming: security definers that record
-- the revision in the same transaction), and deleted only by memex.erase_user (a tenant's
-- own erasure) and memex.maintenance (the access log's retention). The internal writers
-- (memex._record_revision, _log_access, _audit, _save_file, _lock_file, _lock_key) are not
-- executable by tenant roles at all.
revoke all on schema memex from public;
revoke all on all tables in schema memex from public;
revoke all on all sequences in schema memex from public;
revoke execute on all functions in schema memex from public;
revoke all on all tables in schema memex from memex_app, memex_tenant;
revoke execute on all functions in schema memex from memex_app, memex_tenant;

grant usage on schema memex to memex_app, memex_tenant;
grant select, insert, update, delete on memex.memories, memex.tenants
    to memex_app, memex_tenant;
-- History: read only (see above).
grant select on memex.file_revisions, memex.access_log, memex.consolidation_runs
    to memex_app, memex_tenant;
-- The embed queue is the service's alone (its embed worker).
grant select, insert, update, delete on memex.embed_queue to memex_app;
grant select on memex.settings to memex_app, memex_tenant;
grant insert, update on memex.settings to memex_app;
grant execute on all functions in schema memex to memex_app;

-- The tenant API.
grant execute on function
    memex.store, memex.store_many, memex.search, memex.forget, memex.count,
    memex.embedding_dims, memex.get_memory, memex.list_memories, memex.update_memory,
    memex.erase_user, memex.export_memories, memex.import_memories,
    memex.list_files, memex.read_file, memex.write_file, memex.preview_patch,
    memex.patch_file, memex.delete_file, memex.list_revisions, memex.get_revision,
    memex.restore_revision, memex.diff_revisions, memex.access_events, memex.smart_read,
    memex.search_passages, memex.consolidate_tenant, memex.restore_consolidation,
    memex.dream_config, memex.dream_tenant, memex.dream_plan,
    memex.reserve_rate_limit, memex.memory_cursor, memex.memory_cursor_key,
    memex.tenant_cursor, memex.tenant_cursor_key
    to memex_tenant;
-- The helpers it runs with its caller's rights.
grant execute on function
    memex._setting, memex._invalid, memex._check_tenant, memex._check_memory,
    memex._memory_record, memex._recency, memex._score, memex._bm25, memex._query_terms,
    memex._any_term_query, memex._live_memories, memex._candidates_exact,
    memex._candidates_ann, memex._ann_bounded, memex._vector_index_settings,
    memex._enforce_rate_limit,
    memex._authorize, memex._caller, memex._caller_all, memex._caller_agent,
    memex._caller_users, memex._caller_writes, memex._binding, memex._actor,
    memex._check_metadata, memex._check_memories, memex._check_path, memex._file_revision,
    memex._file_record, memex._apply_patch, memex._patched, memex._unified_diff
    to memex_tenant;

-- memex_owner owns the tables (security definer functions create indexes on them) and
-- every security definer function; it runs the other functions those call.
grant usage, create on schema memex to memex_owner;
grant execute on all functions in schema memex to memex_owner;
do $$
declare
    v_object record;
begin
    for v_object in
        select c.oid::regclass as name from pg_class c
        join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'memex' and c.relkind in ('r', 'p')
          and c.relowner <> 'memex_owner'::regrole
    loop
        execute format('alter table %s owner to memex_owner', v_object.name);
    end loop;
    for v_object in
        select p.oid::regprocedure as name from pg_proc p
        join pg_namespace n on n.oid = p.pronamespace
        where n.nspname = 'memex' and p.prosecdef and p.proowner <> 'memex_owner'::regrole
    loop
        execute format('alter function %s owner to memex_owner', v_object.name);
    end loop;
end
$$;
