"""Results that know time (issue 36): memory_record and search_hit carry validity and
supersession.

- memex.memory_record and memex.search_hit gain valid_from, valid_to, superseded_at and
  supersedes (superseded_by they have already), so that store, get, list, update, forget
  and search answer them: the clients read these types by column name.

The re-applied SQL layer (memex._memory_record, memex.search, memex._successors_first)
fills them.

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-06
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None

_DROP = (
    " drop attribute valid_from, drop attribute valid_to, drop attribute superseded_at,"
    " drop attribute supersedes"
)


def upgrade() -> None:
    # sql/revisions/0031_memory_time_results.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    op.execute("alter type memex.search_hit" + _DROP)
    op.execute("alter type memex.memory_record" + _DROP)
