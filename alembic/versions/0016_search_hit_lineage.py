"""Search results carry a memory's lineage, as every other memory result does.

memex.search_hit gains source_ids, superseded_by and archived_at (memex.memory_record
gained them in 0010): a search with p_include_archived ranks archived memories too, and
said which summary replaced each only through a second lookup. REST and MCP results
already had the fields (the memory's answer model), always empty or null in search.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-05
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0016_search_hit_lineage.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    op.execute(
        "alter type memex.search_hit drop attribute source_ids,"
        " drop attribute superseded_by, drop attribute archived_at"
    )
