-- Revision 0026, frozen from 0026_erase_user_confirmed.py.
-- memex.erase_user takes p_confirm and needs admin access: erasing a user is asked for by
-- name (p_confirm repeats p_user_id, MX422 otherwise), never by leaving an argument out
-- (issue 33: `DELETE /v1/memories/?...`, a memory id left empty, was redirected to the erase
-- of the whole user). The old signature, which took write access and no confirmation, is
-- dropped here; the re-applied SQL layer creates the new one.
--
-- No table changes.
--
-- Revision ID: 0026
-- Revises: 0025
-- Create Date: 2026-12-06

drop function if exists memex.erase_user(text, text);
