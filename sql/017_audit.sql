-- memex._audit: record one action of the caller (key creation and revocation, erasure,
-- imports, settings...) in memex.audit_log. A security definer: callers cannot write the
-- log themselves, only through the functions that act.
create or replace function memex._audit(
    p_action text, p_agent_id text, p_user_id text, p_details jsonb default '{}'
)
returns void
language sql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
    insert into memex.audit_log (actor, action, agent_id, user_id, details)
    values (memex._actor(), p_action, p_agent_id, p_user_id, coalesce(p_details, '{}'))
$$;

comment on function memex._audit(text, text, text, jsonb) is
    'Append an entry (actor = the caller) to memex.audit_log.';
