-- Revision 0032, frozen from 0032_supersession_links_index.py.
-- Supersession links by tenant (issue 36): a partial index of the memories a newer one
-- superseded.
--
-- - memories_superseded_idx on memex.memories (agent_id, user_id) including superseded_by,
--   of the rows with superseded_at set (memex.store's p_supersedes; never consolidation's
--   archived sources). memex._supersession_heads reads a tenant's links through it, so a
--   search finds the few memories whose match goes to a successor without a pass over the
--   tenant, and a tenant without links pays one empty index probe.
--
-- Revision ID: 0032
-- Revises: 0031
-- Create Date: 2026-12-06

create index memories_superseded_idx on memex.memories (agent_id, user_id) include (superseded_by) where superseded_at is not null;
