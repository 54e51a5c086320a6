"""The role memex_text_lookup (NOLOGIN, BYPASSRLS), owner of memex._text_rows.

Issue 39, item 0: under the forced row-level security of memex.memories, the text step of
a big tenant's search scanned the tenant; memex._text_rows, owned by this role, reads it
through the GIN index. Created only when the migrating role can (superuser, or CREATEROLE
and BYPASSRLS on PostgreSQL 16+); otherwise skipped with a NOTICE (docs/security.md).

Revision ID: 0039
Revises: 0038
Create Date: 2026-12-06
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0039"
down_revision = "0038"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0039_text_lookup_role.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    # the role is cluster-wide and other databases may use it: kept, like memex_owner
    # (revision 0013); memex._text_rows keeps it as owner until the SQL layer changes
    pass
