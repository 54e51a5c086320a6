"""Batches that supersede (issue 36): memex.store_many and memex.store_queued take
p_supersedes (jsonb[], per item the ids of the older memories it replaces).

Their old signatures are dropped here (`create or replace` with a new parameter would
add an overload); the re-applied SQL layer creates the new ones, and
memex.retire_memories (memorize's "retire"). No table changes.

Revision ID: 0033
Revises: 0031
Create Date: 2026-12-06
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None

_NEW = (
    "memex.store_queued(text[], text[], text[], memex.memory_type[], double precision[],"
    " jsonb[], timestamptz[], timestamptz[], uuid[], jsonb[])",
    "memex.store_many(text[], text[], text[], vector[], text, memex.memory_type[],"
    " double precision[], jsonb[], timestamptz[], timestamptz[], uuid[], jsonb[])",
    "memex.retire_memories(text, text, uuid[], text)",
)


def upgrade() -> None:
    # sql/revisions/0033_batch_supersedes.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    for signature in _NEW:
        op.execute(f"drop function if exists {signature}")
