-- privileges: service
-- memex.revoke_key: revoke an API key by id or prefix, at once (the next request with it
-- gets 401). Revoking a revoked key is a no-op that returns it; a key outside the
-- caller's scope is not found (MX404), like a missing one.
create or replace function memex.revoke_key(p_key text)
returns table (id uuid, prefix text, agent_id text, access text, revoked_at timestamptz)
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_caller jsonb := memex._authorize(memex._caller() ->> 'agent', null, 'admin');
    v_key    memex.api_keys;
begin
    select * into v_key from memex.api_keys k
    where (k.prefix = p_key or k.id::text = lower(p_key))
      and ((v_caller ->> 'all')::boolean or k.agent_id = v_caller ->> 'agent')
    for update;
    if not found then
        raise exception 'API key % not found', p_key using errcode = 'MX404';
    end if;
    if v_key.revoked_at is null then
        update memex.api_keys k set revoked_at = now() where k.id = v_key.id
        returning k.* into v_key;
        perform memex._audit('key.revoke', v_key.agent_id, null,
                             jsonb_build_object('key', v_key.id, 'prefix', v_key.prefix));
    end if;
    return query select v_key.id, v_key.prefix, v_key.agent_id, v_key.access, v_key.revoked_at;
end
$$;

comment on function memex.revoke_key(text) is
    'Revoke an API key (by id or prefix) within the admin caller''s scope.';
