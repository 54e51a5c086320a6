-- privileges: service
-- memex.revoke_key: revoke an API key by id or prefix, at once (the next request with it
-- gets 401). Revoking a revoked key is a no-op that returns it; a key outside the
-- caller's scope is not found (MX404), like a missing one.
-- Revoking the last live key of the caller's scope (of the database for an operator) is
-- MX409 unless p_confirm_last: without a live key nobody can call as that scope any more,
-- and a database that has had keys does not reopen to requests without one
-- (memex._enter): every surface that revokes says so first, and the message names how
-- each confirms (REST ?confirm_last=true, the CLI's --last-key, p_confirm_last).
create or replace function memex.revoke_key(p_key text, p_confirm_last boolean default false)
returns table (id uuid, prefix text, agent_id text, access text, revoked_at timestamptz)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_caller jsonb := memex._authorize(memex._caller() ->> 'agent', null, 'admin');
    v_all    boolean := (v_caller ->> 'all')::boolean;
    v_key    memex.api_keys;
begin
    select * into v_key from memex.api_keys k
    where (k.prefix = p_key or k.id::text = lower(p_key))
      and (v_all or k.agent_id = v_caller ->> 'agent')
    for update;
    if not found then
        raise exception 'API key % not found', p_key using errcode = 'MX404';
    end if;
    if v_key.revoked_at is null then
        if not coalesce(p_confirm_last, false)
           and (v_key.expires_at is null or v_key.expires_at > now())
           and not exists (select from memex.api_keys k
                           where k.id <> v_key.id and k.revoked_at is null
                             and (k.expires_at is null or k.expires_at > now())
                             and (v_all or k.agent_id = v_caller ->> 'agent')) then
            raise exception '%', case when v_all then format(
                'API key %s is the last live key of this database: once it is revoked every '
                'request is refused (401), also requests without a key, until a new key is '
                'created (memexdb keys create) or the operator lets requests without a key '
                'in (memexdb keys allow-keyless --yes)', v_key.prefix)
                else format(
                'API key %s is the last live key of agent %s: once it is revoked only the '
                'operator can create keys for that agent', v_key.prefix, v_key.agent_id) end
                || format('; to revoke it all the same, confirm: DELETE /v1/admin/keys/%s'
                          '?confirm_last=true, memexdb keys revoke %s --last-key, or '
                          'memex.revoke_key(%L, p_confirm_last => true)',
                          v_key.prefix, v_key.prefix, v_key.prefix)
                using errcode = 'MX409';
        end if;
        update memex.api_keys k set revoked_at = now() where k.id = v_key.id
        returning k.* into v_key;
        perform memex._audit('key.revoke', v_key.agent_id, null,
                             jsonb_build_object('key', v_key.id, 'prefix', v_key.prefix));
    end if;
    return query select v_key.id, v_key.prefix, v_key.agent_id, v_key.access, v_key.revoked_at;
end
$$;

comment on function memex.revoke_key(text, boolean) is
    'Revoke an API key (by id or prefix) within the admin caller''s scope; the last live one only when confirmed.';
