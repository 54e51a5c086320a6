-- Revision 0035: memex.search's filters as one value (issue 35).
--
-- - memex.search_filters: the filters of a search (memory types, embedding model,
--   metadata, include_archived, as_of, valid_at, created_after, created_before), built once
--   by memex.search and passed as one argument to the helpers that find its candidates;
--   memex._filtered_memories (new) is the one place that applies them. A new filter is
--   an attribute added here (alter type ... add attribute, in a revision of its own), a
--   parameter of memex.search and a condition in memex._filtered_memories; the helpers in
--   between pass the value on unchanged.
-- - memex._supersession_heads, memex._candidates_exact, memex._candidates_ann and
--   memex._ann_heads take it instead of one argument per filter: their old forms are
--   dropped, the re-applied SQL layer creates the new ones. memex._live_memories keeps its
--   signature (count, list_memories, get_memory and the writes call it), now a wrapper of
--   memex._filtered_memories.
--
-- Revision ID: 0035
-- Revises: 0034
-- Create Date: 2026-12-06

create type memex.search_filters as (
    memory_types memex.memory_type[],
    embedding_model text,
    metadata jsonb,
    include_archived boolean,
    as_of timestamptz,
    valid_at timestamptz,
    created_after timestamptz,
    created_before timestamptz
);

comment on type memex.search_filters is
    'The filters of a search, built once by memex.search, applied by memex._filtered_memories.';

drop function if exists memex._candidates_ann(text, text, vector, text[], memex.memory_type[], text, timestamptz, integer, integer, jsonb, boolean, integer, double precision, double precision, integer, boolean, timestamptz, timestamptz, timestamptz, timestamptz);

drop function if exists memex._candidates_exact(text, text, vector, text[], memex.memory_type[], text, timestamptz, jsonb, boolean, boolean, timestamptz, timestamptz, timestamptz, timestamptz);

drop function if exists memex._ann_heads(text, text, vector, memex.memory_type[], text, timestamptz, jsonb, boolean, boolean, timestamptz, timestamptz, timestamptz, timestamptz, uuid[], double precision[], double precision[]);

drop function if exists memex._supersession_heads(text, text, memex.memory_type[], text, timestamptz, jsonb, boolean, timestamptz, timestamptz, timestamptz, timestamptz, uuid[]);
