-- Row-level security on every tenant table: a row is visible to a caller of every tenant
-- (the operator, an open loopback service, a key for all agents) or to a caller scoped to
-- its agent (and, when the caller is limited to some users, to one of them); writing
-- needs write access too. Forced, so the table owner is held to it as well: only a
-- superuser or a BYPASSRLS role skips it, and the service never acts as one (it switches
-- to memex_app on every connection). The caller's values come from scalar subqueries:
-- InitPlans evaluated once per statement, so each row costs a comparison or two.
-- Re-applied by every migrate that applies the SQL layer; a table added later is one more
-- entry in the array. Nothing already in place is touched: row-level security is enabled
-- and forced only where it is not, and a policy is re-created only when its definition
-- changed (each policy's comment holds the md5 of the definition it was created from), so
-- re-applying takes no ACCESS EXCLUSIVE lock on a tenant table that has its policies (a
-- session idle in a transaction over it does not hold the migration).
do $$
declare
    v_table   text;
    v_sees    constant text :=
        '((select memex._caller_all()) or (agent_id = (select memex._caller_agent())'
        ' and ((select memex._caller_users()) is null'
        ' or user_id = any ((select memex._caller_users())::text[]))))';
    v_writes  constant text := '(select memex._caller_writes())';
    v_policy  record;
begin
    foreach v_table in array array['memories', 'tenants', 'term_stats', 'file_revisions',
                                      'access_log', 'consolidation_runs',
                                      'memory_revisions'] loop
        if not (select c.relrowsecurity from pg_class c
                where c.oid = format('memex.%I', v_table)::regclass) then
            execute format('alter table memex.%I enable row level security', v_table);
        end if;
        if not (select c.relforcerowsecurity from pg_class c
                where c.oid = format('memex.%I', v_table)::regclass) then
            execute format('alter table memex.%I force row level security', v_table);
        end if;
        for v_policy in
            select * from (values
                ('tenant_read', format('for select using %s', v_sees)),
                ('tenant_insert', format('for insert with check (%s and %s)', v_sees, v_writes)),
                ('tenant_update', format('for update using (%s and %s) with check (%s and %s)',
                                         v_sees, v_writes, v_sees, v_writes)),
                ('tenant_delete', format('for delete using (%s and %s)', v_sees, v_writes)),
                -- Every read is logged, a read-only caller's too: memex._log_access (a
                -- security definer, the only way in: no role is granted insert) needs the
                -- tenant, not write access. Permissive policies add up: this one widens
                -- inserts of access_log only.
                ('tenant_log', case when v_table = 'access_log'
                                    then format('for insert with check (%s)', v_sees) end)
            ) p(name, definition)
        loop
            if v_policy.definition is null then
                continue;
            end if;
            if (select obj_description(pol.oid, 'pg_policy') from pg_policy pol
                where pol.polrelid = format('memex.%I', v_table)::regclass
                  and pol.polname = v_policy.name) is not distinct from md5(v_policy.definition)
            then
                continue;  -- in place, as defined: not touched
            end if;
            execute format('drop policy if exists %I on memex.%I', v_policy.name, v_table);
            execute format('create policy %I on memex.%I %s', v_policy.name, v_table,
                           v_policy.definition);
            execute format('comment on policy %I on memex.%I is %L', v_policy.name, v_table,
                           md5(v_policy.definition));
        end loop;
    end loop;
end
$$;

-- The writer of each memory, whoever inserts it (memex.store, an import, a SQL role); set
-- only when it is not already (an ALTER TABLE locks the table).
do $$
begin
    if (select pg_get_expr(d.adbin, d.adrelid) from pg_attrdef d
        join pg_attribute a on a.attrelid = d.adrelid and a.attnum = d.adnum
        where d.adrelid = 'memex.memories'::regclass and a.attname = 'actor')
       is distinct from 'memex._actor()' then
        alter table memex.memories alter column actor set default memex._actor();
    end if;
end
$$;
