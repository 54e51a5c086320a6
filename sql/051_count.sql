-- memex.count: number of live (unexpired, unarchived) memories of a tenant, optionally
-- of one memory type.
create or replace function memex.count(
    p_agent_id text,
    p_user_id text,
    p_memory_type memex.memory_type default null
)
returns bigint
language plpgsql
stable
set search_path = pg_catalog, public, pg_temp
as $$
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    return (
        select count(*) from memex.memories m
        where m.agent_id = p_agent_id
          and m.user_id = p_user_id
          and m.archived_at is null
          and (m.expires_at is null or m.expires_at > now())
          and (p_memory_type is null or m.memory_type = p_memory_type)
    );
end
$$;

comment on function memex.count(text, text, memex.memory_type) is
    'Count live memories of tenant (agent_id, user_id), optionally of one type.';
