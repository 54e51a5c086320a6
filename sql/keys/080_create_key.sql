-- privileges: service
-- memex.create_key: make an API key and return its token, the only time it is shown.
--
-- The token is mxk_<prefix>_<secret>: a 12-hex prefix that identifies the key (listed,
-- logged) and a 64-hex secret from two gen_random_uuid() (244 random bits). Only a salted
-- sha256 of the secret is stored: with that much entropy a slow hash adds nothing, and
-- checking a key stays one index lookup (memex._enter).
-- Scope: an agent (null = every agent, for operator keys) and optionally some of its
-- users; access read (search, count, list, get, export), write (also store, update,
-- delete, erase, import) or admin (also keys and the audit log of its scope). Only an
-- admin may create keys, and never one that reaches beyond its own scope. An expiry in
-- the past makes a key that is expired from the start (refused like a revoked one).
create or replace function memex.create_key(
    p_access text,
    p_agent_id text default null,
    p_user_ids text[] default null,
    p_name text default '',
    p_expires_at timestamptz default null
)
returns table (
    id uuid, token text, prefix text, name text, agent_id text, user_ids text[],
    access text, created_at timestamptz, expires_at timestamptz
)
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_caller jsonb;
    v_prefix text := substr(replace(gen_random_uuid()::text, '-', ''), 1, 12);
    v_secret text := replace(gen_random_uuid()::text, '-', '')
                     || replace(gen_random_uuid()::text, '-', '');
    v_salt   bytea := uuid_send(gen_random_uuid());
    v_key    memex.api_keys;
begin
    if p_access is null or p_access not in ('read', 'write', 'admin') then
        perform memex._invalid('access', 'must be read, write or admin');
    end if;
    if p_agent_id is not null and length(p_agent_id) not between 1 and 128 then
        perform memex._invalid('agent_id', 'must be 1 to 128 characters');
    end if;
    if p_user_ids is not null and (
        cardinality(p_user_ids) not between 1 and 1000
        or exists (select from unnest(p_user_ids) u where u is null or length(u) not between 1 and 128)
    ) then
        perform memex._invalid('user_ids', '1 to 1000 user ids of 1 to 128 characters each');
    end if;
    if p_agent_id is null and p_user_ids is not null then
        perform memex._invalid('user_ids', 'a key limited to users must name its agent');
    end if;
    if length(coalesce(p_name, '')) > 200 then
        perform memex._invalid('name', 'must be at most 200 characters');
    end if;
    -- an admin limited to some users cannot pass (it may not act on "all users")
    v_caller := memex._authorize(p_agent_id, null, 'admin');

    insert into memex.api_keys as k
        (prefix, salt, secret_hash, name, agent_id, user_ids, access, created_by, expires_at)
    values
        (v_prefix, v_salt, sha256(v_salt || convert_to(v_secret, 'UTF8')), coalesce(p_name, ''),
         p_agent_id, p_user_ids, p_access, v_caller ->> 'actor', p_expires_at)
    returning k.* into v_key;
    perform memex._audit('key.create', p_agent_id, null, jsonb_build_object(
        'key', v_key.id, 'prefix', v_prefix, 'access', p_access, 'user_ids', p_user_ids,
        'expires_at', p_expires_at, 'name', v_key.name));
    return query select v_key.id, 'mxk_' || v_prefix || '_' || v_secret, v_key.prefix,
                        v_key.name, v_key.agent_id, v_key.user_ids, v_key.access,
                        v_key.created_at, v_key.expires_at;
end
$$;

comment on function memex.create_key(text, text, text[], text, timestamptz) is
    'Create an API key (read/write/admin, scoped to an agent and users); the token is shown once.';
