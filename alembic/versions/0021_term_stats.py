"""Per-tenant term statistics for BM25: memex.term_stats (issue 26).

One row per (tenant, lexeme): how many of the tenant's stored memories hold the lexeme
(df), the population memex.tenants.memory_count counts (archived and not yet deleted
expired memories included). The ANN path reads a query term's document frequency with one
primary-key probe instead of counting through the GIN index. Kept by triggers on
memex.memories (sql/memories/010_term_stats.sql); memex.check_term_stats recomputes and
compares. Backfilled here from the stored memories.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-05
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0021_term_stats.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    op.execute("drop table memex.term_stats")
