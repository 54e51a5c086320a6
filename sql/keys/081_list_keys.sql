-- privileges: service
-- memex.list_keys: the API keys an admin caller may manage (all of them for an operator,
-- its agent's otherwise), newest first, without their secrets. p_agent_id narrows the list.
create or replace function memex.list_keys(p_agent_id text default null)
returns table (
    id uuid, prefix text, name text, agent_id text, user_ids text[], access text,
    created_at timestamptz, created_by text, expires_at timestamptz,
    revoked_at timestamptz, last_used_at timestamptz
)
language plpgsql stable security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_caller jsonb := memex._authorize(
        coalesce(p_agent_id, memex._caller() ->> 'agent'), null, 'admin');
begin
    return query
    select k.id, k.prefix, k.name, k.agent_id, k.user_ids, k.access, k.created_at,
           k.created_by, k.expires_at, k.revoked_at, k.last_used_at
    from memex.api_keys k
    where (p_agent_id is null or k.agent_id = p_agent_id)
      and ((v_caller ->> 'all')::boolean or k.agent_id = v_caller ->> 'agent')
    order by k.created_at desc, k.id;
end
$$;

comment on function memex.list_keys(text) is
    'API keys the admin caller may manage (no secrets), newest first.';
