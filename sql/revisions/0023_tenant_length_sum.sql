-- Revision 0023, frozen from 0023_tenant_length_sum.py.
-- The tenant's total document length for BM25: memex.tenants.length_sum (issue 26).
--
-- The sum of memories.tsv_length over the memories memex.tenants.memory_count counts, so the
-- ANN path's BM25 takes the tenant's mean document length as length_sum / memory_count,
-- exact and from the row it already reads, instead of the mean of its 200 newest memories
-- (a sample: on prose of varied length it moved scores near the tenth place, recall@10
-- 0.935 -> 0.944 over 80 queries at 200,000 memories, bench/RESULTS.md "Big tenants"). Kept
-- by the triggers that keep memory_count (inserts, deletes: sql/core/020_tenant_counts.sql)
-- and by the content-change trigger (sql/memories/010_term_stats_update.sql). Backfilled
-- here from the stored memories (one pass over memex.memories).
--
-- Revision ID: 0023
-- Revises: 0022
-- Create Date: 2026-12-05

alter table memex.tenants add column length_sum bigint not null default 0 check (length_sum >= 0);

update memex.tenants t set length_sum = s.total
        from (select m.agent_id, m.user_id, sum(m.tsv_length) as total
              from memex.memories m group by 1, 2) s
        where t.agent_id = s.agent_id and t.user_id = s.user_id;
