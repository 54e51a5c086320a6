-- privileges: service
-- memex._audit: record one action of the caller (key creation and revocation, erasure,
-- imports, settings...) in memex.audit_log. Not executable by tenant roles: the audit log
-- is written only by the functions that act (security definers themselves, or the
-- service). The entry names the caller as its actor, always; an entry about an agent
-- needs a caller who may act for that agent (memex.audit_log has no row-level security
-- to refuse it).
create or replace function memex._audit(
    p_action text, p_agent_id text, p_user_id text, p_details jsonb default '{}'
)
returns void
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_caller jsonb := memex._caller();
begin
    if p_agent_id is not null and not coalesce((v_caller ->> 'all')::boolean, false)
       and p_agent_id is distinct from v_caller ->> 'agent' then
        raise exception 'this caller may not record actions of agent %', p_agent_id
            using errcode = '42501';
    end if;
    insert into memex.audit_log (actor, action, agent_id, user_id, details)
    values (coalesce(v_caller ->> 'actor', 'unknown'), p_action, p_agent_id, p_user_id,
            coalesce(p_details, '{}'));
end
$$;

comment on function memex._audit(text, text, text, jsonb) is
    'Append an entry (actor = the caller) to memex.audit_log.';
