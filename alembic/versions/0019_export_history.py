"""Export and import carry a user's whole memory (issue 24): memex.export_memories
answers each memory's path and actor, and memex.import_memories takes them (p_paths,
p_actors) and the access it asks of its caller (p_access). The old signatures are dropped
here; the re-applied SQL layer creates the new ones, and the new functions
(memex.export_history, import_file_revisions, import_access_log, import_consolidation_runs,
missing_memory_ids). No table changes.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-05
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0019_export_history.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    # The old signatures belong to the older SQL layer, which re-creates them when applied.
    pass
