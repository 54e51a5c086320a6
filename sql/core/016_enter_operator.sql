-- privileges: service
-- memex._enter_operator: the caller of this transaction is the operator (every tenant,
-- admin access): the command line and the service's own scheduled jobs, which hold the
-- database credentials themselves.
create or replace function memex._enter_operator(p_actor text)
returns jsonb
language plpgsql volatile set search_path = pg_catalog, pg_temp
as $$
declare
    v_caller jsonb := jsonb_build_object(
        'all', true, 'access', 'admin', 'actor', 'operator:' || coalesce(p_actor, session_user));
begin
    perform set_config('memex.caller', v_caller::text, true);
    return v_caller;
end
$$;

comment on function memex._enter_operator(text) is
    'Set this transaction''s caller to the operator (command line, scheduled jobs).';
