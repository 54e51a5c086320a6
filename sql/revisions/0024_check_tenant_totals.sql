-- Revision 0024, frozen from 0024_check_tenant_totals.py.
-- memex.check_term_stats also recounts the tenant's totals (issue 26): BM25 on the ANN
-- path reads the number of memories and their total length from memex.tenants
-- (memory_count, length_sum, revision 0023) as well as the document frequencies from
-- memex.term_stats, so the operator's check compares all three. Its result changes from
-- (lexeme, stored_df, actual_df) to (statistic, lexeme, stored, actual): the old signature
-- is dropped here; the re-applied SQL layer creates the new one. No table changes.
--
-- Revision ID: 0024
-- Revises: 0023
-- Create Date: 2026-12-05

drop function if exists memex.check_term_stats(text, text);
