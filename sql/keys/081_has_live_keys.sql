-- memex.has_live_keys: whether the database holds an API key that works (not revoked, not
-- expired): `memexdb serve` refuses to listen beyond loopback without one. Operator only
-- (memex._authorize(null, null, 'admin')); a security definer, since api_keys is reached
-- only through functions.
-- privileges: service
create or replace function memex.has_live_keys()
returns boolean
language plpgsql stable security definer set search_path = pg_catalog, pg_temp
as $$
begin
    perform memex._authorize(null, null, 'admin');
    return exists (select from memex.api_keys k
                   where k.revoked_at is null and (k.expires_at is null or k.expires_at > now()));
end
$$;

comment on function memex.has_live_keys() is
    'Whether an API key that works (not revoked, not expired) exists; operator only.';
