-- privileges: service
-- memex._lock_key: the advisory lock key of one named thing (p_kind: 'file', 'consolidate',
-- 'dream', 'index_tenant', 'jobs'; p_name: what within it, e.g. the tenant and path as a
-- json array). Any role may take any advisory lock, so keys are derived from the secret
-- in memex.lock_secret (readable by memex_owner alone): a tenant cannot compute, and so
-- cannot hold, the key of another tenant's file. A security definer, executable only by
-- the service (memex_app) and by the other security definer functions.
create or replace function memex._lock_key(p_kind text, p_name text)
returns bigint
language sql stable security definer set search_path = pg_catalog, pg_temp
as $$
    select ('x' || encode(substr(sha256(s.secret || convert_to(
               jsonb_build_array(p_kind, p_name)::text, 'UTF8')), 1, 8), 'hex'))::bit(64)::bigint
    from memex.lock_secret s
$$;

comment on function memex._lock_key(text, text) is
    'The advisory lock key of a named thing, derived from a secret tenants cannot read.';
