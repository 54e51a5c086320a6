"""Fewer bytes per memory in memex.memories' indexes (issue 39: at most 3.0 kB a memory).

The GIN index on the tsvector (memories_tsv_idx) with a pending list of 256 kB instead of
4 MB (catalog only, no lock on reads or writes), and the HNSW index's m from 16 to 12:
rebuilt here on a table of at most memex.hnsw_rebuild_max_rows rows (default 10,000),
left to the operator's memex.configure_vector_index('hnsw') on a bigger one.

Revision ID: 0038
Revises: 0037
Create Date: 2026-12-06
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0038"
down_revision = "0037"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0038_leaner_indexes.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    # the server's pending list limit again; an m 12 HNSW index built by the upgrade is
    # left as it is (the operator's memex.configure_vector_index('hnsw', p_m => 16)
    # rebuilds it)
    op.execute("alter index memex.memories_tsv_idx reset (gin_pending_list_limit)")
