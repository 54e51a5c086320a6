"""The role memex_trigger_owner (NOLOGIN, BYPASSRLS), owner of the statement triggers on
memex.memories that keep memex.tenants, memex.term_stats and the memory history.

Issue 39, item 1: held to the forced row-level security of those tables, the triggers
checked each inserted row's tenant a second time (~0.2 ms of a store in the backend).
Created only when the migrating role can (superuser, or CREATEROLE and BYPASSRLS on
PostgreSQL 16+); otherwise skipped with a NOTICE (docs/security.md).

Revision ID: 0040
Revises: 0039
Create Date: 2026-12-06
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0040"
down_revision = "0039"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0040_store_trigger_role.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    # the role is cluster-wide and other databases may use it: kept, like memex_owner
    # (revision 0013); the triggers keep it as owner until the SQL layer changes
    pass
