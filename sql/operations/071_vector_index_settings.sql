-- privileges: tenant-helper
-- memex._vector_index_settings: the session settings memex.search applies (and restores)
-- around an ANN search of candidate depth p_depth, for the index recorded in
-- settings.vector_index by memex.configure_vector_index:
--
--   hnsw     hnsw.ef_search = settings.hnsw_ef_search, or p_depth when null (1..1000);
--            hnsw.iterative_scan = relaxed_order
--   ivfflat  ivfflat.probes = settings.ivfflat_probes, or ceil(sqrt(lists)) when null;
--            ivfflat.iterative_scan = relaxed_order
--   none     nothing (large tenants are then ranked by an exact scan)
--
-- Iterative scans (pgvector >= 0.8) keep the index scan going until the tenant filter has
-- let p_depth rows through. default_value is pgvector's default, used to restore a
-- setting that was not defined before the search.
create or replace function memex._vector_index_settings(p_depth integer)
returns table (name text, value text, default_value text)
language sql stable set search_path = pg_catalog, pg_temp
as $$
    with s as (
        select coalesce(memex._setting('vector_index') ->> 'kind', 'hnsw') as kind,
               memex._setting('vector_index') ->> 'lists' as lists,
               memex._setting('hnsw_ef_search') #>> '{}' as ef_search,
               memex._setting('ivfflat_probes') #>> '{}' as probes
    )
    select v.name, v.value, v.default_value
    from s cross join lateral (values
        ('hnsw', 'hnsw.ef_search',
         least(greatest(coalesce(s.ef_search::integer, p_depth), 1), 1000)::text, '40'),
        ('hnsw', 'hnsw.iterative_scan', 'relaxed_order', 'off'),
        ('ivfflat', 'ivfflat.probes',
         least(greatest(coalesce(s.probes::integer,
                                 ceil(sqrt(coalesce(s.lists::integer, 100)))::integer), 1),
               32768)::text, '1'),
        ('ivfflat', 'ivfflat.iterative_scan', 'relaxed_order', 'off')
    ) v(kind, name, value, default_value)
    where v.kind = s.kind
    order by v.name
$$;

comment on function memex._vector_index_settings(integer) is
    'Session settings (hnsw.* / ivfflat.*) memex.search applies for the ANN index in use.';
