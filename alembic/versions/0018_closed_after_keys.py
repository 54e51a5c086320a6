"""memex.revoke_key takes p_confirm_last: revoking the last live key of the caller's scope
is MX409 unless confirmed (issue 25). The old signature is dropped here; the re-applied
SQL layer creates the new one.

No table changes: a database that has had API keys stays closed to requests without a key
once they are all revoked or expired (memex._enter), until the operator lets them in again
(memex.allow_keyless, which records when in memex.settings, name keyless_allowed_since).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-05
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0018_closed_after_keys.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    op.execute("drop function if exists memex.revoke_key(text, boolean)")
