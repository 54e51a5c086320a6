-- Revision 0011, frozen from 0011_bm25_lengths.py.
-- BM25 without reading every tsvector: memories.tsv_length.
--
-- Hybrid and text search need each memory's document length (its lexeme count) and the
-- tenant's mean length. Reading them from the tsvector meant detoasting every tsvector of
-- the tenant on every query: over a 10k-memory tenant of paragraphs that was most of a
-- hybrid search's time. The length is now a stored column next to the row, computed with
-- the same expression as the tsvector, and memex._candidates_exact reads the tsvectors of
-- only the memories the GIN index finds holding a query term.
--
-- Adding a stored generated column rewrites memex.memories once, under an exclusive lock:
-- a large existing table is unavailable for the duration of this upgrade.
--
-- Revision ID: 0011
-- Revises: 0010
-- Create Date: 2026-12-03

alter table memex.memories add column tsv_length integer not null
            generated always as (length(to_tsvector('english'::regconfig, content))) stored;
