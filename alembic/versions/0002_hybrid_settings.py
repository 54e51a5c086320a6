"""Settings for hybrid ranking: BM25/vector weight and temporal context weight.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0002_hybrid_settings.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    op.execute(
        "delete from memex.settings where name in ('hybrid_vector_weight', 'context_weight')"
    )
