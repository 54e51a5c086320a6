-- privileges: service
-- memex.index_tenant: rank a tenant through the ANN index from now on. Sets tenants.ann
-- (creating the tenant's row if it has no memories yet, so that a bulk import goes
-- straight into the index) and moves the tenant's existing memories into the index;
-- returns how many it moved. memex.maintenance calls it for tenants that have grown past
-- settings.exact_scan_max_rows; a DBA may call it ahead of a large import. Moving rows in
-- costs one ANN index insert each (HNSW: ~2 ms), and inserts into the tenant wait until
-- it commits. Idempotent.
create or replace function memex.index_tenant(p_agent_id text, p_user_id text)
returns bigint
language plpgsql volatile set search_path = pg_catalog, public, pg_temp
as $$
declare
    v_moved bigint;
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._authorize(null, null, 'admin');  -- an operator call
    -- Lock the tenant's row first: concurrent inserts wait in memex._tenant_counts and
    -- then see ann = true, so none of their rows is left outside the index.
    insert into memex.tenants as t (agent_id, user_id, memory_count, ann)
    values (p_agent_id, p_user_id, 0, true)
    on conflict (agent_id, user_id) do update set ann = true;
    update memex.memories m set ann = true
    where m.agent_id = p_agent_id and m.user_id = p_user_id and not m.ann;
    get diagnostics v_moved = row_count;
    return v_moved;
end
$$;

comment on function memex.index_tenant(text, text) is
    'Rank the tenant through the ANN index: move its memories in; returns how many.';
