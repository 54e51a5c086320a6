"""Core schema: memories, tenants, rate limits, settings, result types.

Revision ID: 0001
Revises:
Create Date: 2026-12-02
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0001_core_schema.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    # cascade also drops the sql/ functions that use these types; migrate re-creates them.
    op.execute("drop table memex.memories, memex.tenants, memex.rate_limits, memex.settings")
    op.execute(
        "drop type memex.memory_record, memex.search_hit, memex.rate_limit_result,"
        " memex.maintenance_result, memex._candidate, memex.memory_type cascade"
    )
