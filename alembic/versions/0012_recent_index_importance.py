"""The tenant recency index carries importance and id: memories_tenant_recent_idx is
(agent_id, user_id, created_at desc) include (importance, id).

memex._candidates_ann (tenants in the ANN index) reads a tenant's newest memories from
this index alone, with an index-only scan, and bounds the score each could reach from its
recency and importance (its similarity is at most the least among the nearest
neighbours); only those that can reach the top k are read from the table and scored
(bench/RESULTS.md, "Scale benchmark": at alpha 0.7 the 200k-memory tenant no longer
re-ranks its 5,000 newest rows). Exact per-tenant scans use the index as before.

The index is rebuilt once, holding a lock that blocks writes to memex.memories for the
duration of this upgrade (about a second per 200,000 memories).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0012_recent_index_importance.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    op.execute("drop index memex.memories_tenant_recent_idx")
    op.execute(
        "create index memories_tenant_recent_idx"
        " on memex.memories (agent_id, user_id, created_at desc)"
    )
