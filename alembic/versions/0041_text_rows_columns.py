"""memex._text_rows returns the text step's columns by name, not memex.memories in one
database's column order (a database converted online by revision 0037 has `embedding`
last). The old function is dropped; the SQL layer creates the new one.

Revision ID: 0041
Revises: 0040
Create Date: 2026-12-06
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0041"
down_revision = "0040"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0041_text_rows_columns.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    # nothing to undo: the narrower function works on revision 0040's schema as well
    pass
