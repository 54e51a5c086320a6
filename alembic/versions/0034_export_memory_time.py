"""Export that knows time (issue 36): memex.export_memories answers each memory's
validity, supersession and restore marker.

- memex.export_memories gains the result columns valid_from, valid_to, supersedes,
  superseded_at and restored_at (a function's result columns cannot change in place:
  the old one is dropped, the re-applied SQL layer creates the new one), so that an
  export carries them and an import restores them.

Revision ID: 0034
Revises: 0031
Create Date: 2026-12-06
"""

from alembic import op

revision = "0034"
down_revision = "0031"
branch_labels = None
depends_on = None

_EXPORT_MEMORIES = (
    "memex.export_memories(text, text, boolean, text, timestamptz, uuid, integer, timestamptz)"
)


def upgrade() -> None:
    op.execute(f"drop function if exists {_EXPORT_MEMORIES}")


def downgrade() -> None:
    # the re-applied SQL layer of the revision downgraded to creates its own again
    op.execute(f"drop function if exists {_EXPORT_MEMORIES}")
