-- Revision 0019, frozen from 0019_export_history.py.
-- Export and import carry a user's whole memory (issue 24): memex.export_memories
-- answers each memory's path and actor, and memex.import_memories takes them (p_paths,
-- p_actors) and the access it asks of its caller (p_access). The old signatures are dropped
-- here; the re-applied SQL layer creates the new ones, and the new functions
-- (memex.export_history, import_file_revisions, import_access_log, import_consolidation_runs,
-- missing_memory_ids). No table changes.
--
-- Revision ID: 0019
-- Revises: 0018
-- Create Date: 2026-12-05

drop function if exists memex.export_memories(text, text, boolean, text, timestamptz, uuid, integer, timestamptz);

drop function if exists memex.import_memories(uuid[], text[], text[], text[], vector[], text, memex.memory_type[], double precision[], jsonb[], timestamptz[], timestamptz[], timestamptz[], jsonb[]);
