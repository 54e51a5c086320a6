-- memex._index_tenant_step: one bounded step of moving a tenant into the ANN index, for
-- memex.maintenance. Moves up to p_max_rows of the tenant's memories into the index
-- without locking the tenant, so its inserts carry on (the tenant keeps its exact scan,
-- which reads every row whatever its ann flag). Once what is left fits in one step, it
-- finishes through memex.index_tenant, which locks the tenant's row until the caller's
-- transaction commits: only that last step holds the tenant's inserts, and the caller
-- should commit soon after it. Returns the rows moved and whether the tenant is in.
create or replace function memex._index_tenant_step(
    p_agent_id text, p_user_id text, p_max_rows integer, out moved bigint, out finished boolean
)
language plpgsql
volatile
set search_path = pg_catalog, public, pg_temp
as $$
declare
    v_left bigint;
begin
    select count(*) into v_left
    from (select 1 from memex.memories m
          where m.agent_id = p_agent_id and m.user_id = p_user_id and not m.ann
          limit p_max_rows + 1) s;
    finished := v_left <= p_max_rows;
    if finished then
        moved := memex.index_tenant(p_agent_id, p_user_id);
        return;
    end if;
    update memex.memories m set ann = true
    where m.id in (select o.id from memex.memories o
                   where o.agent_id = p_agent_id and o.user_id = p_user_id and not o.ann
                   limit p_max_rows);
    get diagnostics moved = row_count;
end
$$;

comment on function memex._index_tenant_step(text, text, integer) is
    'Move up to p_max_rows of a tenant''s memories into the ANN index; finished once it is in.';
