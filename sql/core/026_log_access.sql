-- privileges: service
-- memex._log_access: record one read or write of the caller (actor = memex._actor()) in
-- memex.access_log. A security definer: callers may read their tenant's log but can only
-- append to it through the file functions (a read-only key's reads are logged too: the
-- table's extra insert policy needs the tenant, not write access).
create or replace function memex._log_access(
    p_agent_id text, p_user_id text, p_operation text, p_target text,
    p_details jsonb default '{}'
)
returns void
language sql volatile security definer set search_path = pg_catalog, pg_temp
as $$
    insert into memex.access_log (agent_id, user_id, actor, operation, target, details)
    values (p_agent_id, p_user_id, memex._actor(), p_operation, p_target,
            coalesce(p_details, '{}') || memex._on_behalf_of())
$$;

comment on function memex._log_access(text, text, text, text, jsonb) is
    'Append an entry (actor = the caller) to memex.access_log.';
