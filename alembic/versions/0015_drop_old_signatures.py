"""Old signatures dropped once, here: until now the re-applied SQL layer (`sql/`) dropped
the overloads its functions had before they gained a parameter, so that layer carried its
own history. A database that an older memexdb migrated still holds them; `create or
replace` with new parameters adds an overload beside the old one instead of replacing it.

From this revision on the SQL layer only creates: a function whose parameters or result
type change gets a new revision that drops the old signature (the next memexdb migrate
then re-applies the layer and creates the new one, in the same transaction).
`tests/test_catalog.py` checks that a database upgraded step by step ends with exactly the
functions of a fresh one.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-05
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0015_drop_old_signatures.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    # The old signatures belong to older SQL layers, which re-create them when applied.
    pass
