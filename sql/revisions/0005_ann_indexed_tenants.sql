-- Revision 0005, frozen from 0005_ann_indexed_tenants.py.
-- Only large tenants in the ANN index.
--
-- Tenants up to settings.exact_scan_max_rows are ranked by an exact scan, so an ANN index
-- over their rows is never read, yet every insert paid for it: an HNSW insert was ~90 % of
-- memex.store's database time (2.2 of 2.5 ms CPU, bench/RESULTS.md "Load test"), and the
-- filtered index scan of a large tenant waded through everybody else's rows.
--
-- - memories.ann: the row is in the ANN index. The index becomes partial (where ann).
-- - tenants.ann: the tenant is ranked through the ANN index. Its new rows get ann = true
--   on insert (trigger, sql/020_tenant_counts.sql); memex.index_tenant() sets it and
--   moves the existing rows in; memex.maintenance() does so for tenants that have grown
--   past exact_scan_max_rows. A tenant with ann = false is always ranked exactly.
-- - maintenance_result.tenants_indexed: how many tenants maintenance moved in.
--
-- Here, tenants already past the threshold are moved in at once and the ANN index there is
-- (if any) is rebuilt as a partial index over their rows.
--
-- Revision ID: 0005
-- Revises: 0004
-- Create Date: 2026-12-02

alter table memex.memories add column ann boolean not null default false;

alter table memex.tenants add column ann boolean not null default false;

alter type memex.maintenance_result add attribute tenants_indexed integer;

update memex.tenants set ann = true
        where memory_count > coalesce(
            (select (value #>> '{}')::bigint from memex.settings
             where name = 'exact_scan_max_rows'), 10000);

update memex.memories m set ann = true
        from memex.tenants t
        where t.ann and m.agent_id = t.agent_id and m.user_id = t.user_id;

do $$
        declare
            v_name text;
            v_def  text;
        begin
            for v_name, v_def in
                select c.relname::text, pg_get_indexdef(c.oid)
                from pg_index i
                join pg_class c on c.oid = i.indexrelid
                join pg_am a on a.oid = c.relam
                where i.indrelid = 'memex.memories'::regclass
                  and a.amname in ('hnsw', 'ivfflat')
            loop
                execute format('drop index memex.%I', v_name);
                execute v_def || ' where ann';
            end loop;
        end
        $$;
