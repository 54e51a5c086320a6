-- privileges: service
-- memex.allow_keyless: let requests without an API key in again, on a database that has
-- had keys and has no live one left (memex._enter refuses them otherwise, so that
-- revoking or outliving the last key never silently opens a service to everyone). A
-- loopback service then answers a request without a key as "open": admin of every
-- tenant; a service beyond loopback still refuses to start without a live key. Creating
-- a key closes the database again. Operator only (the command line: `memexdb keys
-- allow-keyless --yes`), MX409 while a live key exists; recorded in the audit log
-- (keys.allow_keyless). Returns when requests without a key were let in.
create or replace function memex.allow_keyless()
returns timestamptz
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_live text[];
begin
    perform memex._authorize(null, null, 'admin');
    select array_agg(k.prefix order by k.created_at) into v_live from memex.api_keys k
    where k.revoked_at is null and (k.expires_at is null or k.expires_at > now());
    if v_live is not null then
        raise exception 'this database has live API keys (%): requests without a key stay '
                        'refused while any works; revoke them first', array_to_string(v_live, ', ')
            using errcode = 'MX409';
    end if;
    insert into memex.settings as s (name, value)
    values ('keyless_allowed_since', to_jsonb(now()))
    on conflict (name) do update set value = excluded.value, updated_at = now();
    perform memex._audit('keys.allow_keyless', null, null,
                         jsonb_build_object('since', now()));
    return now();
end
$$;

comment on function memex.allow_keyless() is
    'Let requests without an API key in again on a database with no live key (operator only, audited).';
