"""Vector index knobs: the index memex.search uses, recorded in settings, and its query-time
parameters. The default is HNSW (m 16, ef_construction 64), the index revision 0001
already built, so no index is rebuilt here. A DBA changes it with
memex.configure_vector_index() from a migration of their own (docs/sql-api.md); see
bench/RESULTS.md ("Scale benchmark") for the figures behind the default.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0003_vector_index_knobs.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    op.execute(
        "delete from memex.settings"
        " where name in ('vector_index', 'hnsw_ef_search', 'ivfflat_probes')"
    )
    # cascade: also drops memex.configure_vector_index; migrate re-creates what head needs.
    op.execute("drop type memex.vector_index_result cascade")
