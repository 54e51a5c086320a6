-- privileges: service
-- memex._index_tenant_step: one bounded step of moving a tenant into the ANN index, for
-- memex.maintenance. Moves up to p_max_rows of the tenant's memories into the index
-- without locking the tenant, so its inserts carry on (the tenant keeps its exact scan,
-- which reads every row whatever its ann flag). A step that finds fewer rows left than
-- that finishes through memex.index_tenant, which locks the tenant's row until the
-- caller's transaction commits and moves what arrived meanwhile: only that last, short
-- move holds the tenant's inserts, and the caller should commit soon after it. Returns
-- the rows moved and whether the tenant is in.
create or replace function memex._index_tenant_step(
    p_agent_id text, p_user_id text, p_max_rows integer, out moved bigint, out finished boolean
)
language plpgsql volatile set search_path = pg_catalog, public, pg_temp
as $$
begin
    update memex.memories m set ann = true
    where m.id in (select o.id from memex.memories o
                   where o.agent_id = p_agent_id and o.user_id = p_user_id and not o.ann
                   limit p_max_rows);
    get diagnostics moved = row_count;
    finished := moved < p_max_rows;
    if finished then
        moved := moved + memex.index_tenant(p_agent_id, p_user_id);
    end if;
end
$$;

comment on function memex._index_tenant_step(text, text, integer) is
    'Move up to p_max_rows of a tenant''s memories into the ANN index; finished once it is in.';
