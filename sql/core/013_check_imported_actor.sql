-- privileges: service
-- memex._check_imported_actor: raise unless an imported record of agent p_agent_id may
-- name p_actor as who wrote it: a key of this database (key:<id>) that belongs to another
-- agent is refused (42501) unless the caller is of every agent (the operator), so that an
-- agent's admin cannot put another agent's key into its history. Any other actor (a key
-- of this agent or of every agent, the operator, a role, a key this database does not
-- know: the exporting one's) is kept as exported. p_field names the record in the error.
create or replace function memex._check_imported_actor(
    p_agent_id text, p_actor text, p_field text
)
returns void
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
declare
    v_key_agent text;
    v_known     boolean := false;
begin
    if p_actor is null or memex._caller_all() then
        return;
    end if;
    if p_actor ~* '^key:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
        select true, k.agent_id into v_known, v_key_agent
        from memex.api_keys k where k.id = substr(p_actor, 5)::uuid;
    end if;
    if v_known and v_key_agent is not null and v_key_agent is distinct from p_agent_id then
        raise exception using
            errcode = '42501',
            message = format('%s: %s is a key of another agent than %s',
                             p_field, p_actor, p_agent_id),
            column = p_field;
    end if;
end
$$;

comment on function memex._check_imported_actor(text, text, text) is
    'Raise unless an imported record of an agent may name this actor (not another agent''s key).';
