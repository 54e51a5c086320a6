-- Revision 0017, frozen from 0017_store_with_id.py.
-- memex.store takes an optional id (p_id), memex.store_many ids (p_ids): a client's, so
-- that a retried store stores once.
--
-- A repeat of the same memory with that id returns the stored one; another memory with
-- that id is MX409 (memexdb-client sends fresh ids with every store, issue 23). The old
-- signatures are dropped here; the re-applied SQL layer creates the new ones.
--
-- Revision ID: 0017
-- Revises: 0016
-- Create Date: 2026-12-05

drop function if exists memex.store(text, text, text, vector, text, memex.memory_type, double precision, jsonb, timestamptz, timestamptz);

drop function if exists memex.store_many(text[], text[], text[], vector[], text, memex.memory_type[], double precision[], jsonb[], timestamptz[], timestamptz[]);
