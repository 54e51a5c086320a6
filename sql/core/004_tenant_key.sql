-- privileges: tenant-helper
-- memex._tenant_key: a tenant's 64-bit key, the hash of its (agent_id, user_id) (the
-- agent's length first, so that no two pairs spell the same string). The first column of
-- memories_tenant_key_recent_idx (revision 0025), which the ANN path's neighbour probes
-- descend: a fixed-width key compares faster than two text columns, and every column of
-- such an index tuple is at a known offset (bench/RESULTS.md, "Big tenants: neighbours by
-- a fixed-width key"). Two tenants may share a key: a probe reads the rows of both, and
-- keeps its own tenant's by agent_id and user_id.
-- The index was built with this definition (revision 0025 creates the function with the
-- same body): never change it without a revision that rebuilds the index.
-- No SET search_path here on purpose: the planner must inline it to match the index.
create or replace function memex._tenant_key(p_agent_id text, p_user_id text)
returns bigint
language sql immutable parallel safe
as $$
    select pg_catalog.hashtextextended(
        pg_catalog.length(p_agent_id)::text operator(pg_catalog.||) ':'
        operator(pg_catalog.||) p_agent_id operator(pg_catalog.||) p_user_id, 0)
$$;

comment on function memex._tenant_key(text, text) is
    'A tenant''s 64-bit key (hash of agent_id and user_id), first column of an index.';
