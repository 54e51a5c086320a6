-- Row-level security on every tenant table: a row is visible to a caller of every tenant
-- (the operator, an open loopback service, a key for all agents) or to a caller scoped to
-- its agent (and, when the caller is limited to some users, to one of them); writing
-- needs write access too. Forced, so the table owner is held to it as well: only a
-- superuser or a BYPASSRLS role skips it, and the service never acts as one (it switches
-- to memex_app on every connection). The caller's values come from scalar subqueries:
-- InitPlans evaluated once per statement, so each row costs a comparison or two.
-- Re-applied on every migrate; a table added later is one more entry in the array.
do $$
declare
    v_table   text;
    v_sees    constant text :=
        '((select memex._caller_all()) or (agent_id = (select memex._caller_agent())'
        ' and ((select memex._caller_users()) is null'
        ' or user_id = any ((select memex._caller_users())::text[]))))';
    v_writes  constant text := '(select memex._caller_writes())';
begin
    foreach v_table in array array['memories', 'tenants', 'term_stats', 'file_revisions',
                                      'access_log', 'consolidation_runs'] loop
        execute format('alter table memex.%I enable row level security', v_table);
        execute format('alter table memex.%I force row level security', v_table);
        execute format('drop policy if exists tenant_read on memex.%I', v_table);
        execute format('drop policy if exists tenant_insert on memex.%I', v_table);
        execute format('drop policy if exists tenant_update on memex.%I', v_table);
        execute format('drop policy if exists tenant_delete on memex.%I', v_table);
        execute format('create policy tenant_read on memex.%I for select using %s',
                       v_table, v_sees);
        execute format('create policy tenant_insert on memex.%I for insert with check (%s and %s)',
                       v_table, v_sees, v_writes);
        execute format('create policy tenant_update on memex.%I for update using (%s and %s)'
                       ' with check (%s and %s)', v_table, v_sees, v_writes, v_sees, v_writes);
        execute format('create policy tenant_delete on memex.%I for delete using (%s and %s)',
                       v_table, v_sees, v_writes);
    end loop;
    -- Every read is logged, a read-only caller's too: memex._log_access (a security
    -- definer, the only way in: no role is granted insert) needs the tenant, not write
    -- access. Permissive policies add up: this one widens inserts of access_log only.
    drop policy if exists tenant_log on memex.access_log;
    execute format('create policy tenant_log on memex.access_log for insert with check (%s)',
                   v_sees);
end
$$;

-- The writer of each memory, whoever inserts it (memex.store, an import, a SQL role).
alter table memex.memories alter column actor set default memex._actor();
