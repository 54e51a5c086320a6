-- Revision 0020, frozen from 0020_faithful_records.py.
-- Memories answer with what the client sent, and search results carry the whole record.
--
-- - memex.memories.importance becomes double precision: as a real, 1.2 came back as
--   1.2000000476837158 on every surface. Stored values are converted through their
--   shortest text form (a real's 1.2 becomes the double 1.2, the value the client sent).
--   memex.export_memories returned a real too: it is dropped here and the re-applied SQL
--   layer creates it with the wider type.
-- - memex.search_hit gains updated_at and embedding_model (memex.memory_record has them):
--   search results were the record without them.
--
-- Revision ID: 0020
-- Revises: 0019
-- Create Date: 2026-12-05

alter table memex.memories alter column importance type double precision using importance::text::double precision;

drop function if exists memex.export_memories(text, text, boolean, text, timestamptz, uuid, integer, timestamptz);

alter type memex.search_hit add attribute updated_at timestamptz, add attribute embedding_model text;
