"""memex.store takes an optional id (p_id), memex.store_many ids (p_ids): a client's, so
that a retried store stores once.

A repeat of the same memory with that id returns the stored one; another memory with
that id is MX409 (memexdb-client sends fresh ids with every store, issue 23). The old
signatures are dropped here; the re-applied SQL layer creates the new ones.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-05
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0017_store_with_id.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    # The old signatures belong to the older SQL layer, which re-creates them when applied.
    pass
