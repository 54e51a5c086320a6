-- Who may use what, re-applied after every migrate (a test reads it back). Nothing is
-- granted to PUBLIC. memex_app is the service: it enters a caller per transaction
-- (memex._enter) and may run every function, the operator's and the scheduled jobs'
-- included. memex_tenant is the group of login roles bound to one tenant for direct SQL
-- (memex.bind_sql_role): the tenant API, the helpers it runs as its caller, and the
-- tenant tables under row-level security. API keys, SQL role bindings, the audit log and
-- the rate-limit counters are reached only through security definer functions.
revoke all on schema memex from public;
revoke all on all tables in schema memex from public;
revoke all on all sequences in schema memex from public;
revoke execute on all functions in schema memex from public;
revoke all on all tables in schema memex from memex_app, memex_tenant;
revoke execute on all functions in schema memex from memex_app, memex_tenant;

grant usage on schema memex to memex_app, memex_tenant;
grant select, insert, update, delete on memex.memories, memex.tenants
    to memex_app, memex_tenant;
-- File history is append-only: revisions and access-log entries are written by security
-- definer functions (memex._record_revision, memex._log_access); callers read them and
-- erase them with their user (memex.erase_user; the access log's retention is pruned by
-- memex.maintenance).
grant select, delete on memex.file_revisions, memex.access_log to memex_app, memex_tenant;
-- Consolidation runs are written by the consolidation functions (security definer);
-- callers read their tenant's and erase them with their user. The embed queue is the
-- service's alone (its embed worker).
grant select, delete on memex.consolidation_runs to memex_app, memex_tenant;
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
    memex.restore_revision, memex.access_events, memex.smart_read,
    memex.search_passages, memex.consolidate_tenant, memex.restore_consolidation,
    memex.dream_config, memex.dream_tenant, memex.dream_plan,
    memex.reserve_rate_limit
    to memex_tenant;
-- The helpers it runs with its caller's rights.
grant execute on function
    memex._setting, memex._invalid, memex._check_tenant, memex._check_memory,
    memex._memory_record, memex._recency, memex._score, memex._bm25, memex._query_terms,
    memex._any_term_query, memex._live_memories, memex._candidates_exact,
    memex._candidates_ann, memex._vector_index_settings, memex._enforce_rate_limit,
    memex._authorize, memex._caller, memex._caller_all, memex._caller_agent,
    memex._caller_users, memex._caller_writes, memex._binding, memex._actor,
    memex._check_metadata, memex._check_memories, memex._audit,
    memex._check_path, memex._log_access, memex._file_revision, memex._lock_file,
    memex._record_revision, memex._file_record, memex._save_file, memex._apply_patch, memex._patched
    to memex_tenant;
