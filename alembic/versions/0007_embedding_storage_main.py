"""Keep embeddings inline in the heap row (storage main).

pgvector declares `vector` with storage external: once a row passes PostgreSQL's 2 kB TOAST
threshold, the embedding (1,540 bytes at 384 dimensions) is the first value moved out of
line, and every similarity computed from the heap then fetches it from the TOAST table.
A memory of a paragraph (~400 characters) with its tsvector already passes the threshold.
With storage main the content and tsvector are compressed or moved out instead, and the
vector stays in the row: an exact vector search over a 10,000-memory tenant of
500-character memories took 27.6 -> 15.1-17.1 ms (bench/RESULTS.md, "Paragraph-sized
memories").

Only rows written from now on are stored this way; existing rows keep their layout until
they are rewritten (e.g. VACUUM FULL or pg_repack), which this revision does not force.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0007_embedding_storage_main.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    op.execute("alter table memex.memories alter column embedding set storage external")
