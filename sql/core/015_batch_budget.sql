-- privileges: service
-- memex._batch_budget: widen this transaction's request budget (memex._enter) for a batch
-- of p_items memories (memex.store_many: up to 1,000 items of up to 32,000 characters),
-- which a budget sized for one store would refuse on a loaded machine. Called by the
-- service after memex._enter and before the batch's statement (a statement's timeout is
-- armed when it starts):
--   statement_timeout = request_statement_timeout_ms + p_items * request_batch_item_ms
--                       (defaults 30000 and 200: a 500-item batch may run 130 s);
--   lock_timeout      = request_lock_timeout_ms * (1 + p_items / 500.0)
--                       (default 5000: a 500-item batch waits at most 10 s for a lock).
-- A budget the operator set to 0 (no limit) stays 0. Local to the transaction; never
-- narrows the budget. Returns nothing.
create or replace function memex._batch_budget(p_items integer)
returns void
language plpgsql volatile set search_path = pg_catalog, pg_temp
as $$
declare
    v_items     bigint := greatest(coalesce(p_items, 1), 1);
    v_statement bigint := memex._setting('request_statement_timeout_ms', '30000')::bigint;
    v_lock      bigint := memex._setting('request_lock_timeout_ms', '5000')::bigint;
    v_per_item  bigint := memex._setting('request_batch_item_ms', '200')::bigint;
begin
    if v_statement > 0 then
        perform set_config('statement_timeout', (v_statement + v_items * v_per_item)::text, true);
    end if;
    if v_lock > 0 then
        perform set_config('lock_timeout', ceil(v_lock * (1 + v_items / 500.0))::bigint::text,
                           true);
    end if;
end
$$;

comment on function memex._batch_budget(integer) is
    'Widen this request''s statement and lock timeouts for a batch of p_items memories.';
