"""Settings for hybrid ranking: BM25/vector weight and temporal context weight.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        insert into memex.settings (name, value) values
            ('hybrid_vector_weight', '0.5'),
            ('context_weight', '0.5')
        on conflict (name) do nothing
        """
    )


def downgrade() -> None:
    op.execute(
        "delete from memex.settings where name in ('hybrid_vector_weight', 'context_weight')"
    )
