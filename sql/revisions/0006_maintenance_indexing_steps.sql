-- Revision 0006, frozen from 0006_maintenance_indexing_steps.py.
-- Maintenance moves grown tenants into the ANN index in bounded steps.
--
-- Revision 0005 moved a tenant in with one statement under the tenant's row lock: its
-- inserts waited for the whole move (~20 s for 10k rows under HNSW, minutes for a large
-- import). memex.maintenance now moves settings.index_batch_rows rows per step without that
-- lock and takes it only for the last step (sql/062_index_tenant_step.sql).
--
-- - maintenance_result.memories_indexed: rows maintenance moved into the ANN index, so a
--   scheduler can tell that a tenant is still being moved and call again soon.
--
-- Revision ID: 0006
-- Revises: 0005
-- Create Date: 2026-12-02

alter type memex.maintenance_result add attribute memories_indexed bigint;
