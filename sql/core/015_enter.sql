-- privileges: service
-- memex._enter: set the caller of this transaction from an API key (memex.caller, local
-- to the transaction), as the service does before every call it makes for a request.
--
--   token given:  it must be a live key (not revoked, not expired) whose salted sha256
--                 matches; the caller is the key's agent, users and access.
--   no token:     refused when p_require_key (a service listening beyond loopback), when
--                 any live key exists, or when keys were created since the operator last
--                 let requests without a key in (memex.allow_keyless): a database whose
--                 keys were all revoked or expired stays closed. Otherwise the caller is
--                 "open": every tenant, admin access (a loopback service before its first
--                 key).
-- Raises SQLSTATE 28000 (401) with a message saying what is wrong. Returns the caller.
-- Bounds the rest of the transaction, a request's: no lock is waited on longer than
-- settings.request_lock_timeout_ms (default 5000) and no statement runs longer than
-- settings.request_statement_timeout_ms (default 30000), so a request fails (SQLSTATE
-- 55P03 / 57014, HTTP 503) and is rolled back rather than applied after its client gave
-- up.
-- last_used_at is written at most once a minute per key, and not in a read-only
-- transaction (a hot standby answers keyed reads; the primary records the next use).
create or replace function memex._enter(p_token text, p_require_key boolean default false)
returns jsonb
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_prefix text := substr(p_token, 5, 12);
    v_secret text := substr(p_token, 18);
    v_key    memex.api_keys;
    v_caller jsonb;
    v_live   boolean;  -- keyless: a key is live (a key is then required)
    v_closed boolean;  -- keyless: a key was made since keyless calls were let in
begin
    if p_token is null or p_token = '' then
        if p_require_key then
            raise exception 'an API key is required: send Authorization: Bearer <key>'
                using errcode = '28000';
        end if;
        -- both questions in one statement (the keyless request asks them both)
        select exists (select from memex.api_keys k
                       where k.revoked_at is null
                         and (k.expires_at is null or k.expires_at > now())),
               exists (select from memex.api_keys k
                       where k.created_at > coalesce(
                           (memex._setting('keyless_allowed_since') #>> '{}')::timestamptz,
                           '-infinity'))
        into v_live, v_closed;
        if v_live then
            raise exception 'this database has API keys: send Authorization: Bearer <key>'
                using errcode = '28000';
        end if;
        if v_closed then
            raise exception 'this database is closed: its API keys were all revoked or '
                            'expired. Create one (memexdb keys create --access admin), or '
                            'let requests without a key in (memexdb keys allow-keyless --yes)'
                using errcode = '28000';
        end if;
        v_caller := '{"all": true, "access": "admin", "actor": "open"}';
    else
        -- mxk_<12 hex>_<64 hex>, checked without a regular expression (a third of the
        -- function's time when it had one)
        if length(p_token) <> 81 or left(p_token, 4) <> 'mxk_' or substr(p_token, 17, 1) <> '_'
           or translate(v_prefix || v_secret, '0123456789abcdef', '') <> '' then
            raise exception 'malformed API key (expected mxk_<12 hex>_<64 hex>)'
                using errcode = '28000';
        end if;
        select * into v_key from memex.api_keys k where k.prefix = v_prefix;
        if not found or not memex._digest_equal(
                sha256(v_key.salt || convert_to(v_secret, 'UTF8')), v_key.secret_hash) then
            raise exception 'invalid API key' using errcode = '28000';
        end if;
        if v_key.revoked_at is not null then
            raise exception 'API key % was revoked at %', v_key.prefix, v_key.revoked_at
                using errcode = '28000';
        end if;
        if v_key.expires_at is not null and v_key.expires_at <= now() then
            raise exception 'API key % expired at %', v_key.prefix, v_key.expires_at
                using errcode = '28000';
        end if;
        -- (not in a read-only transaction, e.g. on a hot standby: a read replica answers
        -- searches with the key; the primary records its next use; docs/scaling.md)
        if (v_key.last_used_at is null or v_key.last_used_at < now() - interval '1 minute')
           and current_setting('transaction_read_only') = 'off' then
            update memex.api_keys k set last_used_at = now() where k.id = v_key.id;
        end if;
        v_caller := jsonb_build_object(
            'all', v_key.agent_id is null, 'agent', v_key.agent_id,
            'users', to_jsonb(v_key.user_ids), 'access', v_key.access,
            'actor', 'key:' || v_key.id, 'key', v_key.id, 'prefix', v_key.prefix);
    end if;
    -- one statement for the three (the two timeouts read as memex._setting reads them,
    -- without its two calls: bench/RESULTS.md, "Per-request cost, third round")
    perform set_config('memex.caller', v_caller::text, true),
            set_config('lock_timeout',
                       coalesce((select s.value from memex.settings s
                                 where s.name = 'request_lock_timeout_ms'),
                                '5000')::text, true),
            set_config('statement_timeout',
                       coalesce((select s.value from memex.settings s
                                 where s.name = 'request_statement_timeout_ms'),
                                '30000')::text, true);
    return v_caller;
end
$$;

comment on function memex._enter(text, boolean) is
    'Set this transaction''s caller from an API key (28000 when missing or not valid).';
