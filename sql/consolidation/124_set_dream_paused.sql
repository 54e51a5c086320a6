-- privileges: service
-- memex.set_dream_paused: pause or resume consolidation (condensing and dreaming) of one
-- tenant (admin: the operator, or an admin key of the agent). Audited. MX404 when the
-- tenant has no memories yet (nothing to pause). Returns whether it is paused now.
create or replace function memex.set_dream_paused(
    p_agent_id text, p_user_id text, p_paused boolean
)
returns boolean
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    if p_paused is null then
        perform memex._invalid('paused', 'must be true or false');
    end if;
    perform memex._authorize(p_agent_id, null, 'admin');
    update memex.tenants t set dream_paused = p_paused
    where t.agent_id = p_agent_id and t.user_id = p_user_id;
    if not found then
        raise exception 'tenant (%, %) has no memories', p_agent_id, p_user_id
            using errcode = 'MX404';
    end if;
    perform memex._audit(case when p_paused then 'dream.pause' else 'dream.resume' end,
                         p_agent_id, p_user_id, '{}');
    return p_paused;
end
$$;

comment on function memex.set_dream_paused(text, text, boolean) is
    'Pause or resume consolidation of one tenant (admin, audited).';
