"""BM25 without reading every tsvector: memories.tsv_length.

Hybrid and text search need each memory's document length (its lexeme count) and the
tenant's mean length. Reading them from the tsvector meant detoasting every tsvector of
the tenant on every query: over a 10k-memory tenant of paragraphs that was most of a
hybrid search's time. The length is now a stored column next to the row, computed with
the same expression as the tsvector, and memex._candidates_exact reads the tsvectors of
only the memories the GIN index finds holding a query term.

Adding a stored generated column rewrites memex.memories once, under an exclusive lock:
a large existing table is unavailable for the duration of this upgrade.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-03
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0011_bm25_lengths.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    op.execute("alter table memex.memories drop column tsv_length")
