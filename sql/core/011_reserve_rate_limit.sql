-- privileges: tenant
-- memex.reserve_rate_limit: pay for a store or search before doing the expensive part of
-- it (embedding its texts), and return the reservation's id (null when the operation has
-- no limit). p_agent_ids and p_user_ids hold one tenant per item that the call will
-- store or search (a batch of N memories: N items). Every tenant is authorized first
-- (write access for 'store', read for 'search'); then each agent's items are counted as
-- memex._enforce_rate_limit counts them (per caller and per agent), all or nothing: over
-- the limit it raises MX429 and nothing is counted or reserved.
-- The call that follows, in another transaction, names the reservation in the setting
-- memex.rate_reservation (select set_config('memex.rate_reservation', id::text, true))
-- and is then not counted again while the reservation holds its items; an unused
-- reservation expires after 5 minutes (its budget stays spent, as for a request that
-- failed after it was counted).
create or replace function memex.reserve_rate_limit(
    p_operation text,
    p_agent_ids text[],
    p_user_ids text[]
)
returns uuid
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_id    uuid := gen_random_uuid();
    v_agent text;
    v_user  text;
    v_items integer;
begin
    if p_operation is null or p_operation not in ('store', 'search') then
        perform memex._invalid('operation', 'must be store or search');
    end if;
    if p_agent_ids is null or cardinality(p_agent_ids) < 1
       or array_position(p_agent_ids, null) is not null then
        perform memex._invalid('agent_ids', 'must hold at least one agent id, none null');
    end if;
    if p_user_ids is null or cardinality(p_user_ids) <> cardinality(p_agent_ids)
       or array_position(p_user_ids, null) is not null then
        perform memex._invalid('user_ids', 'must hold one user id per agent id, none null');
    end if;
    for v_agent, v_user in select distinct a, u from unnest(p_agent_ids, p_user_ids) t(a, u)
                          order by 1, 2 loop
        perform memex._authorize(
            v_agent, v_user, case p_operation when 'store' then 'write' else 'read' end);
    end loop;
    if jsonb_typeof(memex._setting('rate_limit_' || p_operation || '_per_minute'))
       is distinct from 'number' then
        return null;
    end if;
    for v_agent, v_items in select a, count(*)::integer from unnest(p_agent_ids) a
                            group by a order by a loop
        perform memex._enforce_rate_limit(p_operation, v_agent, v_items, v_id);
    end loop;
    return v_id;
end
$$;

comment on function memex.reserve_rate_limit(text, text[], text[]) is
    'Count a store/search of these tenants'' items against the limits before embedding them.';
