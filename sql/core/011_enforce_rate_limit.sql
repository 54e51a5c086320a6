-- privileges: tenant-helper
-- memex._enforce_rate_limit: apply the operator's per-minute limit for an operation
-- ('store': every write, 'search': every read), configured in memex.settings as
-- rate_limit_<op>_per_minute (null = unlimited), to p_items items (a batch of N memories
-- costs N). The same limit is counted twice, and a call must fit both counters:
--   * per caller: per API key (however many agents it names), per bound SQL role;
--   * per agent: the agent the call is for (p_agent_id; null: the caller's own agent), so
--     that the keys of one agent share its budget: minting more keys adds none.
-- A caller without a key or binding (open mode, the operator) is counted per agent only.
-- Raises SQLSTATE MX429 with retry_after_seconds and the operation in DETAIL (json); the
-- exception rolls back every counter the call touched, so a refused call costs nothing.
--
-- p_reserve (memex.reserve_rate_limit) pays now for work still to come and records what
-- was paid as reservation p_reserve of this agent. Without it, a call first spends the
-- reservation named by the transaction's memex.rate_reservation setting (the service sets
-- it on the store or search that follows its reservation) if that reservation is this
-- caller's, for this operation and agent, and still holds p_items: then nothing is
-- counted again. Any other value of the setting is ignored (the call is counted).
--
-- A security definer, so that callers need no access to memex.rate_limits; memex._caller
-- reads the binding of the session's login role first, so a SQL role cannot choose whose
-- counter it hits, and a caller may only spend the budget of an agent it may act on.
create or replace function memex._enforce_rate_limit(
    p_operation text,
    p_agent_id text,
    p_items integer default 1,
    p_reserve uuid default null
)
returns void
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_limit    jsonb := memex._setting('rate_limit_' || p_operation || '_per_minute');
    v_caller   jsonb;
    v_agent    text;
    v_payer    text;
    v_subjects text[];
    v_subject  text;
    v_setting  text;
    v_left     integer;
    v_result   memex.rate_limit_result;
    v_denied   text;
    v_retry    double precision := 0;
begin
    if v_limit is null or jsonb_typeof(v_limit) <> 'number' then
        return;
    end if;
    if p_items is null or p_items < 1 then
        perform memex._invalid('items', 'must be >= 1');
    end if;
    v_caller := memex._caller();
    if coalesce(v_caller ->> 'access', 'none') = 'none' then
        raise exception 'no caller: authenticate with an API key' using errcode = '28000';
    end if;
    if p_agent_id is not null and not coalesce((v_caller ->> 'all')::boolean, false)
       and p_agent_id is distinct from v_caller ->> 'agent' then
        raise exception 'this key may not access agent %', p_agent_id using errcode = '42501';
    end if;
    v_agent := coalesce(p_agent_id, v_caller ->> 'agent');
    v_payer := case
        when v_caller ? 'key' then 'key:' || (v_caller ->> 'key')
        when (v_caller ->> 'actor') like 'role:%' then v_caller ->> 'actor'
    end;

    if p_reserve is null and v_agent is not null then
        v_setting := current_setting('memex.rate_reservation', true);
        if v_setting ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
            update memex.rate_limit_reservations r
            set items = r.items - p_items
            where r.agent_id = v_agent and r.id = v_setting::uuid
              and r.operation = p_operation
              and r.payer = coalesce(v_payer, 'actor:' || (v_caller ->> 'actor'))
              and r.items >= p_items and r.expires_at > clock_timestamp()
            returning r.items into v_left;
            if found then
                if v_left = 0 then
                    delete from memex.rate_limit_reservations r
                    where r.agent_id = v_agent and r.id = v_setting::uuid;
                end if;
                return;
            end if;
        end if;
    end if;

    -- the caller's counter first, then the agent's: one order for every call, so that
    -- concurrent calls lock the counters in the same order
    v_subjects := array_remove(array[v_payer, 'agent:' || v_agent], null);
    if cardinality(v_subjects) = 0 then  -- an operator key or open mode, for no agent
        v_subjects := array['actor:' || (v_caller ->> 'actor')];
    end if;
    foreach v_subject in array v_subjects loop
        v_result := memex.rate_limit_hit(
            p_operation || ':' || v_subject, v_limit::integer, 60, null, p_items);
        if not v_result.allowed then
            v_denied := coalesce(v_denied, v_subject);
            v_retry := greatest(v_retry, v_result.retry_after_seconds);
        end if;
    end loop;
    if v_denied is not null then
        if p_items > v_limit::integer then
            raise exception 'rate limit exceeded: % items are more than the % limit of % per minute; send at most % at a time',
                    p_items, p_operation, v_limit, v_limit
                using errcode = 'MX429',
                      detail = json_build_object(
                          'retry_after_seconds', v_retry, 'operation', p_operation)::text;
        end if;
        raise exception 'rate limit exceeded: % % per minute for %', v_limit, p_operation,
                replace(v_denied, ':', ' ')
            using errcode = 'MX429',
                  detail = json_build_object(
                      'retry_after_seconds', v_retry, 'operation', p_operation)::text;
    end if;

    if p_reserve is not null and v_agent is not null then
        insert into memex.rate_limit_reservations as r
            (agent_id, id, operation, payer, items, expires_at)
        values
            (v_agent, p_reserve, p_operation,
             coalesce(v_payer, 'actor:' || (v_caller ->> 'actor')), p_items,
             clock_timestamp() + interval '5 minutes')
        on conflict (agent_id, id) do update set items = r.items + excluded.items
            where r.operation = excluded.operation and r.payer = excluded.payer;
    end if;
end
$$;

comment on function memex._enforce_rate_limit(text, text, integer, uuid) is
    'Raise MX429 when the caller (key or SQL role) or the agent is over its limit for p_items.';
