-- privileges: tenant-helper
-- memex._delegate: the rest of this transaction writes as one of memexdb's own agents
-- (p_actor: 'memorize-agent' for memory_memorize, 'dream-agent' for consolidation) on
-- behalf of the caller already entered: memex._actor() returns p_actor, and revisions and
-- access-log entries record the caller as on_behalf_of. The caller's scope and access are
-- unchanged, so a delegated write passes exactly the checks the caller's own would.
-- The service delegates for the caller it entered (memex.caller); a bound SQL role (the
-- TypeScript direct client's memorize, issue 38) for itself: memex.delegate is set, and
-- memex._caller names the agent as actor and the role as on_behalf_of, its binding's
-- scope and access unchanged (a role that sets memex.delegate by hand gains nothing: its
-- writes name it as on_behalf_of all the same).
create or replace function memex._delegate(p_actor text)
returns jsonb
language plpgsql volatile set search_path = pg_catalog, pg_temp
as $$
declare
    v_caller jsonb := memex._caller();
begin
    if p_actor is null or p_actor not in ('memorize-agent', 'dream-agent') then
        perform memex._invalid('actor', 'must be memorize-agent or dream-agent');
    end if;
    if coalesce(v_caller ->> 'access', 'none') = 'none' then
        raise exception 'no caller to act for: enter one first (memex._enter)'
            using errcode = '28000';
    end if;
    v_caller := v_caller || jsonb_build_object(
        'actor', p_actor,
        'on_behalf_of', coalesce(v_caller ->> 'on_behalf_of', v_caller ->> 'actor'));
    perform set_config('memex.caller', v_caller::text, true);
    perform set_config('memex.delegate', p_actor, true);
    return memex._caller();
end
$$;

comment on function memex._delegate(text) is
    'Write the rest of this transaction as memorize-agent or dream-agent, for the caller.';
