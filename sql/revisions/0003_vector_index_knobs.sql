-- Revision 0003, frozen from 0003_vector_index_knobs.py.
-- Vector index knobs: the index memex.search uses, recorded in settings, and its query-time
-- parameters. The default is HNSW (m 16, ef_construction 64), the index revision 0001
-- already built, so no index is rebuilt here. A DBA changes it with
-- memex.configure_vector_index() from a migration of their own (docs/sql-api.md); see
-- bench/RESULTS.md ("Scale benchmark") for the figures behind the default.
--
-- Revision ID: 0003
-- Revises: 0002
-- Create Date: 2026-12-02

create type memex.vector_index_result as (
            kind          text,
            index_name    text,
            parameters    jsonb,
            rebuilt       boolean,
            build_seconds double precision,
            index_bytes   bigint
        );

insert into memex.settings (name, value)
        select 'vector_index', coalesce(
            (select jsonb_build_object('kind', a.amname)
                    || case a.amname when 'hnsw' then '{"m": 16, "ef_construction": 64}'
                                     else '{"lists": 100}' end::jsonb
                    || coalesce((select jsonb_object_agg(split_part(o, '=', 1),
                                                         split_part(o, '=', 2)::integer)
                                 from unnest(c.reloptions) o), '{}')
             from pg_index i
             join pg_class c on c.oid = i.indexrelid
             join pg_am a on a.oid = c.relam
             where i.indrelid = 'memex.memories'::regclass
               and a.amname in ('hnsw', 'ivfflat')
             order by c.relname
             limit 1),
            '{"kind": "none"}')
        on conflict (name) do nothing;

insert into memex.settings (name, value) values
            ('hnsw_ef_search', 'null'),
            ('ivfflat_probes', 'null')
        on conflict (name) do nothing;
