-- privileges: service
-- memex._tenant_counts: keep memex.tenants.memory_count and length_sum (the sum of the
-- memories' tsv_length: BM25's mean length is length_sum / memory_count) in step with
-- memex.memories; a content change moves length_sum in memex._term_stats_update.
-- Statement-level with transition tables, so a 10k-row import is one upsert per tenant,
-- not 10k updates of one hot row. memex.maintenance reads the count to move tenants into
-- the ANN index. The upsert also locks the tenant's row: if memex.index_tenant moved the
-- tenant in after memex._ann_on_insert read tenants.ann = false for a new row, that row
-- is moved in here, so an indexed tenant never has rows outside the index.
-- A security definer: the writer needs no write grant on memex.tenants, so a tenant's SQL
-- role cannot set its own count or move itself out of the ANN index. Owned by
-- memex_trigger_owner (BYPASSRLS, revision 0040; sql/security/999_grants.sql), it does not
-- check the tenant policies a second time for rows the insert or delete into
-- memex.memories checked (memex_owner's, under them, where that role could not be made).
create or replace function memex._tenant_counts()
returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_indexed boolean;
begin
    if tg_op = 'INSERT' then
        with counted as (
            insert into memex.tenants as t (agent_id, user_id, memory_count, length_sum)
            select n.agent_id, n.user_id, count(*), sum(n.tsv_length)
            from new_rows n group by 1, 2
            order by 1, 2  -- a fixed lock order keeps concurrent imports deadlock-free
            on conflict (agent_id, user_id)
                do update set memory_count = t.memory_count + excluded.memory_count,
                              length_sum = t.length_sum + excluded.length_sum
            returning t.ann
        )
        select coalesce(bool_or(c.ann), false) into v_indexed from counted c;
        -- Only a tenant in the ANN index can have rows that must move in, and only rows
        -- memex._ann_on_insert left out (it read tenants.ann before the move): the update
        -- of memex.memories runs for them alone (most stores, of small tenants or into the
        -- index already, skip it). The tenants' rows are locked by the upsert above, so
        -- their ann cannot change before this transaction ends.
        if v_indexed and exists (select from new_rows n where not n.ann) then
            update memex.memories m set ann = true
            from new_rows n join memex.tenants t using (agent_id, user_id)
            where t.ann and not n.ann and m.id = n.id;
        end if;
    else
        update memex.tenants t
        set memory_count = greatest(t.memory_count - d.n, 0),
            length_sum = greatest(t.length_sum - d.length, 0)
        from (select o.agent_id, o.user_id, count(*) as n, sum(o.tsv_length) as length
              from old_rows o group by 1, 2) d
        where t.agent_id = d.agent_id and t.user_id = d.user_id;
    end if;
    return null;
end
$$;

comment on function memex._tenant_counts() is
    'Trigger: maintain memex.tenants.memory_count and length_sum on insert/delete of memories.';

create or replace trigger memories_count_insert
    after insert on memex.memories
    referencing new table as new_rows
    for each statement execute function memex._tenant_counts();

create or replace trigger memories_count_delete
    after delete on memex.memories
    referencing old table as old_rows
    for each statement execute function memex._tenant_counts();
