-- Revision 0012, frozen from 0012_recent_index_importance.py.
-- The tenant recency index carries importance and id: memories_tenant_recent_idx is
-- (agent_id, user_id, created_at desc) include (importance, id).
--
-- memex._candidates_ann (tenants in the ANN index) reads a tenant's newest memories from
-- this index alone, with an index-only scan, and bounds the score each could reach from its
-- recency and importance (its similarity is at most the least among the nearest
-- neighbours); only those that can reach the top k are read from the table and scored
-- (bench/RESULTS.md, "Scale benchmark": at alpha 0.7 the 200k-memory tenant no longer
-- re-ranks its 5,000 newest rows). Exact per-tenant scans use the index as before.
--
-- The index is rebuilt once, holding a lock that blocks writes to memex.memories for the
-- duration of this upgrade (about a second per 200,000 memories).
--
-- Revision ID: 0012
-- Revises: 0011
-- Create Date: 2026-12-04

drop index memex.memories_tenant_recent_idx;

create index memories_tenant_recent_idx on memex.memories (agent_id, user_id, created_at desc) include (importance, id);
