"""Rate-limit reservations: memex.rate_limit_reservations holds the budget a caller paid
for before embedding (memex.reserve_rate_limit), so that the store or search it then sends
spends the reservation instead of being counted a second time.

A reservation is one row per agent of the batch: the operation, the caller's counter that
paid for it (`key:<id>`, `role:<name>` or the actor), the items left, and an expiry
(memex.maintenance() prunes expired rows). Only security definer functions read or write
it: no role is granted anything on it (sql/999_grants.sql).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-05
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0014_rate_limit_reservations.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    op.execute("drop table memex.rate_limit_reservations")
