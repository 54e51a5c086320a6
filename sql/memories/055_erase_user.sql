-- privileges: tenant
-- memex.erase_user: delete every row of tenant (agent_id, user_id) from every table keyed
-- by the tenant, archived and expired memories included, and return one row per table
-- with the number of rows deleted. A table that later issues add (files, revisions,
-- access log...) is one more name in v_tables, each holding agent_id and user_id; the
-- order matters where rows depend on others (memories before tenants, whose counts the
-- memories' delete trigger updates). memex.rate_limits is keyed by agent, not by user, so
-- an erased user leaves nothing there. A security definer (owned by memex_owner, so
-- row-level security still applies): history tables are append-only for every caller,
-- and erasure is the one function that deletes them, after memex._authorize.
-- Admin access only (the history is evidence: a write key may forget memories, not erase
-- a person's record), and p_confirm must repeat p_user_id (MX422 naming `confirm`
-- otherwise), so that no caller erases a user by leaving an argument out: the erasure
-- is asked for by name, by every caller, SQL callers included.
-- The user's history counters (memex.history_ids: the last access-log and file-revision
-- numbers) go too, not counted in the result: a user of that id written again later
-- numbers from 1. The erasure is in memex.audit_log (who, when, how many rows), never what was erased.
-- (It took no confirmation and write access before: revision 0026 drops that signature,
-- so that no database keeps the old, unconfirmed erasure callable.)
create or replace function memex.erase_user(p_agent_id text, p_user_id text, p_confirm text)
returns table (table_name text, deleted bigint)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_tables text[] := array[
        'memories',
        'tenants',
        'file_revisions',
        'access_log',
        'consolidation_runs'
    ];
    v_table  text;
    v_count  bigint;
    v_counts jsonb := '{}';
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._authorize(p_agent_id, p_user_id, 'admin');
    if p_confirm is distinct from p_user_id then
        perform memex._invalid('confirm', format(
            'must repeat user_id (%s) to erase every memory, file, revision and access-log'
            ' row of user %s of agent %s', p_user_id, p_user_id, p_agent_id));
    end if;
    foreach v_table in array v_tables loop
        execute format('delete from memex.%I where agent_id = $1 and user_id = $2', v_table)
            using p_agent_id, p_user_id;
        get diagnostics v_count = row_count;
        table_name := v_table;
        deleted := v_count;
        v_counts := v_counts || jsonb_build_object(v_table, v_count);
        return next;
    end loop;
    delete from memex.history_ids h where h.agent_id = p_agent_id and h.user_id = p_user_id;
    perform memex._audit('user.erase', p_agent_id, p_user_id, jsonb_build_object('deleted', v_counts));
end
$$;

comment on function memex.erase_user(text, text, text) is
    'Delete every row of tenant (agent_id, user_id) in every tenant table (admin; p_confirm'
    ' must repeat p_user_id); counts per table.';
