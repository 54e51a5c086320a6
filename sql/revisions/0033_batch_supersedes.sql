-- Revision 0033, frozen from 0033_batch_supersedes.py.
-- Batches that supersede (issue 36): memex.store_many and memex.store_queued take
-- p_supersedes (jsonb[], per item the ids of the older memories it replaces).
--
-- Their old signatures are dropped here (`create or replace` with a new parameter would
-- add an overload); the re-applied SQL layer creates the new ones, and
-- memex.retire_memories (memorize's "retire"). No table changes.
--
-- Revision ID: 0033
-- Revises: 0031
-- Create Date: 2026-12-06

drop function if exists memex.store_queued(text[], text[], text[], memex.memory_type[], double precision[], jsonb[], timestamptz[], timestamptz[], uuid[]);

drop function if exists memex.store_many(text[], text[], text[], vector[], text, memex.memory_type[], double precision[], jsonb[], timestamptz[], timestamptz[], uuid[]);
