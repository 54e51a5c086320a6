-- Revision 0016, frozen from 0016_search_hit_lineage.py.
-- Search results carry a memory's lineage, as every other memory result does.
--
-- memex.search_hit gains source_ids, superseded_by and archived_at (memex.memory_record
-- gained them in 0010): a search with p_include_archived ranks archived memories too, and
-- said which summary replaced each only through a second lookup. REST and MCP results
-- already had the fields (the memory's answer model), always empty or null in search.
--
-- Revision ID: 0016
-- Revises: 0015
-- Create Date: 2026-12-05

alter type memex.search_hit add attribute source_ids uuid[], add attribute superseded_by uuid, add attribute archived_at timestamptz;
