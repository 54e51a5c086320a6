"""Maintenance moves grown tenants into the ANN index in bounded steps.

Revision 0005 moved a tenant in with one statement under the tenant's row lock: its
inserts waited for the whole move (~20 s for 10k rows under HNSW, minutes for a large
import). memex.maintenance now moves settings.index_batch_rows rows per step without that
lock and takes it only for the last step (sql/062_index_tenant_step.sql).

- maintenance_result.memories_indexed: rows maintenance moved into the ANN index, so a
  scheduler can tell that a tenant is still being moved and call again soon.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0006_maintenance_indexing_steps.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    op.execute("drop function if exists memex._index_tenant_step(text, text, integer)")
    op.execute("alter type memex.maintenance_result drop attribute memories_indexed")
