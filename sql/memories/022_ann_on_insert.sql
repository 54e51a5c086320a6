-- privileges: service
-- memex._ann_on_insert: a new memory of a tenant ranked through the ANN index goes into
-- the index (memories.ann = tenants.ann). Small tenants' rows stay out of it: they are
-- ranked by an exact scan, and an HNSW insert costs ~8x the rest of the insert.
-- (A tenant moved in while this insert runs is handled by memex._tenant_counts.)
-- A security definer owned by memex_trigger_owner (BYPASSRLS, revision 0040) when that
-- role exists: the lookup of the tenant's flag skips the tenant policies of memex.tenants
-- (memex_owner's, held to them, otherwise). It reads one row, of the tenant the new row
-- names, and writes nothing but that row's flag; the row is checked under the insert
-- policy after this before-trigger (a row of another tenant fails there, its flag unseen).
create or replace function memex._ann_on_insert()
returns trigger
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
begin
    new.ann := coalesce((select t.ann from memex.tenants t
                         where t.agent_id = new.agent_id and t.user_id = new.user_id), false);
    return new;
end
$$;

comment on function memex._ann_on_insert() is
    'Trigger: new memories of ANN-indexed tenants go into the ANN index (memories.ann).';

create or replace trigger memories_ann_on_insert
    before insert on memex.memories
    for each row execute function memex._ann_on_insert();
