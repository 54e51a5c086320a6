-- Revision 0036: supersession updates that can be HOT (issue 36: a superseding store's
-- cost).
--
-- - memories_superseded_idx (revision 0032) and memories_superseded_by_idx (revision 0010)
--   are dropped: they made superseded_at and superseded_by indexed columns, so the update
--   of the older memory a store supersedes (and consolidation's archive of its sources)
--   was never a heap-only (HOT) update: the new row version took an entry in every index
--   of memex.memories, the HNSW and GIN ones among them.
-- - memories_supersedes_idx on memex.memories (agent_id, user_id) including supersedes, of
--   the rows with supersedes set (successors: written when the successor is inserted, never
--   by the older memory's update) takes their place. memex._supersession_heads reads a
--   tenant's links from its successors' supersedes through it (a tenant without links:
--   one empty probe, as before); forget, put_memories and restore_consolidation find the
--   memories one memory superseded or condensed through its own supersedes / source_ids
--   (primary key), then keep those whose superseded_by is still that memory.
--
-- Revision ID: 0036
-- Revises: 0035
-- Create Date: 2026-12-06

drop index memex.memories_superseded_idx;

drop index memex.memories_superseded_by_idx;

create index memories_supersedes_idx on memex.memories (agent_id, user_id) include (supersedes) where supersedes is not null;
