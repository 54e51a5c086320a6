"""Export that knows time, and a cheaper superseding store (issue 36).

- memex.export_memories gains the result columns valid_from, valid_to, supersedes,
  superseded_at and restored_at (a function's result columns cannot change in place:
  the old one is dropped, the re-applied SQL layer creates the new one), so that an
  export carries them and an import restores them.
- memex._supersede gains p_new_from (memex.store passes its new memory's start: no
  re-read of it, no second write): the four-argument form is dropped, the re-applied SQL
  layer creates the five-argument one (its callers' four-argument calls still resolve).

Revision ID: 0034
Revises: 0031
Create Date: 2026-12-06
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0034"
down_revision = "0033"
branch_labels = None
depends_on = None

_NEW_SIGNATURES = (
    "memex.export_memories(text, text, boolean, text, timestamptz, uuid, integer, timestamptz)",
    "memex._supersede(text, text, uuid, uuid[], timestamptz)",
)


def upgrade() -> None:
    # sql/revisions/0034_export_memory_time.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    # the re-applied SQL layer of the revision downgraded to creates its own again
    for signature in _NEW_SIGNATURES:
        op.execute(f"drop function if exists {signature}")
