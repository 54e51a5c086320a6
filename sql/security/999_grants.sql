-- Who may use what, re-applied after every migrate (a test reads it back). Nothing is
-- granted to PUBLIC. memex_app is the service: it enters a caller per transaction
-- (memex._enter) and may run every function, the operator's and the scheduled jobs'
-- included. memex_tenant is the group of login roles bound to one tenant for direct SQL
-- (memex.bind_sql_role): it may run the tenant API and holds no privilege on any table,
-- so a tenant role can neither LOCK a table (in any mode: every mode needs a table
-- privilege) nor EXPLAIN a query over one (the planner's row estimates would tell it
-- about other tenants' rows, which row-level security does not hide). Every function of
-- the tenant API that reads or writes a table is a security definer; API keys, SQL role
-- bindings, the audit log, the lock secret and the rate-limit counters are likewise
-- reached only through security definer functions. memex_owner (no login, no BYPASSRLS)
-- owns the tables and every security definer function, so row-level security (forced on
-- the tenant tables) still applies inside them, to the real caller (memex._caller reads
-- the session's login role and the service's entered caller, never current_user): a
-- definer function is a second wall, not a door.
--
-- memex_app keeps table privileges for the service's own jobs that run as security
-- invoker (the embed worker, index_tenant, the statistics, settings; docs/security.md):
-- memex_app is a NOLOGIN role only the operator's login roles are members of.
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
-- memex_tenant: no table at all (see above).
grant select, insert, update, delete on memex.memories to memex_app;
-- Counts and term statistics: kept by security definer triggers on memex.memories; the
-- service's operator functions (memex.index_tenant, maintenance) also write them.
grant select, insert, update, delete on memex.tenants, memex.term_stats to memex_app;
-- History: read only (see above).
grant select on memex.file_revisions, memex.access_log, memex.consolidation_runs,
    memex.memory_revisions to memex_app;
-- The embed queue is the service's alone (its embed worker).
grant select, insert, update, delete on memex.embed_queue to memex_app;
grant select, insert, update on memex.settings to memex_app;
grant execute on all functions in schema memex to memex_app;
-- Procedures (pg_cron's consolidation tick, which commits as it goes): "all functions"
-- leaves them out; memex_app may run them as it runs the scheduled jobs' functions.
revoke all on all procedures in schema memex from public, memex_tenant;
grant execute on all procedures in schema memex to memex_app;

-- The tenant API and the helpers it runs with its caller's rights: every function whose
-- file declares `-- privileges: tenant` or `-- privileges: tenant-helper`; `service`
-- functions (the operator's, the scheduled jobs', the internal writers) stay memex_app's.
-- memexdb migrate reads the declarations from the files and passes them here, for this
-- transaction only (memex.function_privileges: a JSON object, function name to class).
-- A memex function without a declaration stops the migration: nothing is granted by
-- default, and nothing unclassified goes unnoticed (tests/golden/privileges.txt is the
-- catalog's record of the outcome).
do $$
declare
    v_declared jsonb := nullif(current_setting('memex.function_privileges', true), '')::jsonb;
    v_function record;
begin
    if v_declared is null then
        raise exception 'memex: the grants need the functions'' privileges declarations'
            using errcode = '55000',
                  hint = 'apply the SQL layer with memexdb migrate, which passes them';
    end if;
    for v_function in
        select p.oid::regprocedure as signature, p.proname::text as name from pg_proc p
        where p.pronamespace = 'memex'::regnamespace order by 1
    loop
        case v_declared ->> v_function.name
            when 'tenant', 'tenant-helper' then
                execute format('grant execute on function %s to memex_tenant',
                               v_function.signature);
            when 'service' then
                null;
            when 'definer-helper' then
                -- memex_owner's alone (granted below): reached only through the security
                -- definer functions, which authorized their caller (memex._text_rows)
                execute format('revoke execute on function %s from memex_app',
                               v_function.signature);
            else
                raise exception 'memex: % has no privileges declaration', v_function.signature
                    using errcode = '55000',
                          hint = 'its sql/ file needs one line: -- privileges: tenant'
                                 ' | tenant-helper | service | definer-helper';
        end case;
    end loop;
end
$$;

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
          and p.oid not in ('memex._text_rows(text, text, timestamptz, boolean,
                             memex.search_filters, tsquery, bigint)'::regprocedure,
                            'memex._ann_neighbour_rows(text, text, public.halfvec,
                             timestamptz, boolean, memex.search_filters, timestamptz[],
                             uuid[], integer)'::regprocedure)  -- decided below
          -- the triggers' owner is decided below
          and p.oid not in ('memex._tenant_counts()'::regprocedure,
                            'memex._term_stats()'::regprocedure,
                            'memex._memory_revisions_stored()'::regprocedure,
                            'memex._memory_revision()'::regprocedure,
                            'memex._term_stats_update()'::regprocedure,
                            'memex._ann_on_insert()'::regprocedure)
    loop
        execute format('alter function %s owner to memex_owner', v_object.name);
    end loop;
end
$$;

-- memex._text_rows (the text step of a big tenant's search, through the GIN index: under
-- the forced row-level security of memex.memories, `tsv @@ query` is no index condition)
-- and memex._ann_neighbour_rows (its neighbour probes, through the tenant-key index, whose
-- functions are not leakproof either) are owned by memex_text_lookup (NOLOGIN, BYPASSRLS:
-- revision 0039) when that role exists and the migrating role may give it the functions;
-- memex_text_lookup may read memex.memories and run the live-memories filter and the
-- tenant key, nothing else. Without it they are memex_owner's, held to row-level security
-- like every other (the scan and the key as a filter, as before). Either way only
-- memex_owner may execute them (class definer-helper, above).
do $$
declare
    v_function regprocedure;
begin
    foreach v_function in array array[
        'memex._text_rows(text, text, timestamptz, boolean, memex.search_filters, tsquery,
                          bigint)'::regprocedure,
        'memex._ann_neighbour_rows(text, text, public.halfvec, timestamptz, boolean,
                                   memex.search_filters, timestamptz[], uuid[],
                                   integer)'::regprocedure]
    loop
        if exists (select from pg_roles where rolname = 'memex_text_lookup')
           and pg_has_role(current_user, 'memex_text_lookup', 'member') then
            grant usage on schema memex to memex_text_lookup;
            grant select on memex.memories to memex_text_lookup;
            grant execute on function memex._filtered_memories(text, text, timestamptz,
                                                               boolean, memex.search_filters)
                to memex_text_lookup;
            -- inlined into the probes to match the index's expression (the planner inlines
            -- a function only for a role that may execute it)
            grant execute on function memex._tenant_key(text, text) to memex_text_lookup;
            begin
                execute format('alter function %s owner to memex_text_lookup', v_function);
            exception when insufficient_privilege then  -- memex_text_lookup lacks CREATE
                raise notice 'memex: % stays memex_owner''s (%)', v_function, sqlerrm;
                execute format('alter function %s owner to memex_owner', v_function);
            end;
        else
            execute format('alter function %s owner to memex_owner', v_function);
        end if;
        execute format('revoke execute on function %s from public, memex_app, memex_tenant',
                       v_function);
        execute format('grant execute on function %s to memex_owner', v_function);
    end loop;
end
$$;

-- The statement triggers on memex.memories that keep memex.tenants (memex._tenant_counts),
-- memex.term_stats (memex._term_stats) and the memory history (memex._memory_revisions_stored)
-- are owned by memex_trigger_owner (NOLOGIN, BYPASSRLS: revision 0040) when that role
-- exists and the migrating role may give it the functions: they write only what their
-- transition tables hold, rows whose tenant the insert into (or delete from)
-- memex.memories has checked under the tenant policies already, so they skip a second
-- check. So are the update path's row triggers (memex._memory_revision: a change's
-- revision; memex._term_stats_update: a content change's statistics), which run after
-- the update's checks and write only the tenant of the row that fired them, and the
-- insert's memex._ann_on_insert, which reads the new row's tenant's ANN flag before the
-- insert's check (a row of another tenant fails it, nothing written).
-- Trigger functions run only as triggers (nobody can call them), and the role may
-- do only what they do: upsert and lower the counts and term statistics, number and
-- insert revisions (no UPDATE or DELETE on the history; of its columns it reads the
-- memory and revision number alone, for the next number), move inserted rows into the ANN
-- index (UPDATE of memories.ann alone), and run the functions those statements evaluate
-- (the writer: memex._actor, _on_behalf_of, _caller, _bound_caller, _binding; the index
-- key: memex._tenant_key). Without it the triggers are memex_owner's, held to row-level
-- security like every other definer function (a second check, as before).
do $$
declare
    v_function regprocedure;
    v_owner    text := 'memex_owner';
begin
    if exists (select from pg_roles where rolname = 'memex_trigger_owner')
       and pg_has_role(current_user, 'memex_trigger_owner', 'member') then
        grant usage on schema memex to memex_trigger_owner;
        grant select, insert, update on memex.tenants, memex.history_ids
            to memex_trigger_owner;
        grant select, insert, update, delete on memex.term_stats to memex_trigger_owner;
        grant insert, select (memory_id, revision) on memex.memory_revisions
            to memex_trigger_owner;
        grant select, update (ann) on memex.memories to memex_trigger_owner;
        grant execute on function memex._actor(), memex._on_behalf_of(), memex._caller(),
            memex._bound_caller(), memex._binding(), memex._tenant_key(text, text)
            to memex_trigger_owner;
        v_owner := 'memex_trigger_owner';
    end if;
    foreach v_function in array array['memex._tenant_counts()', 'memex._term_stats()',
                                      'memex._memory_revisions_stored()',
                                      'memex._memory_revision()', 'memex._term_stats_update()',
                                      'memex._ann_on_insert()']::regprocedure[] loop
        begin
            execute format('alter function %s owner to %I', v_function, v_owner);
        exception when insufficient_privilege then  -- the role lacks CREATE on memex
            raise notice 'memex: % stays memex_owner''s (%)', v_function, sqlerrm;
            execute format('alter function %s owner to memex_owner', v_function);
        end;
    end loop;
end
$$;
