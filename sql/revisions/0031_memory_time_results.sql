-- Revision 0031, frozen from 0031_memory_time_results.py.
-- Results that know time (issue 36): memory_record and search_hit carry validity and
-- supersession.
--
-- - memex.memory_record and memex.search_hit gain valid_from, valid_to, superseded_at and
--   supersedes (superseded_by they have already), so that store, get, list, update, forget
--   and search answer them: the clients read these types by column name.
--
-- The re-applied SQL layer (memex._memory_record, memex.search, memex._successors_first)
-- fills them.
--
-- Revision ID: 0031
-- Revises: 0030
-- Create Date: 2026-12-06

alter type memex.memory_record add attribute valid_from timestamptz, add attribute valid_to timestamptz, add attribute superseded_at timestamptz, add attribute supersedes uuid[];

alter type memex.search_hit add attribute valid_from timestamptz, add attribute valid_to timestamptz, add attribute superseded_at timestamptz, add attribute supersedes uuid[];
