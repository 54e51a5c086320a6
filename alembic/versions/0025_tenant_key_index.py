"""The ANN path's neighbour probes descend an index of fixed-width keys.

memex._candidates_ann fetches the two memories just before and after each of ~500 nearest
and text-matching memories: ~1,000 descents of memories_tenant_recent_idx per request,
whose (agent_id, user_id) text columns are compared at every step and put every later
column of an index tuple at an unknown offset (19 % of a 50,000-memory tenant's request
in `_bt_first`). memories_tenant_key_recent_idx keys the same order by the tenant's 64-bit
hash, memex._tenant_key(agent_id, user_id), then (created_at desc, id desc). The probes
also keep their tenant's rows by agent_id and user_id, so a shared hash costs time only.

The function is created here with the body the index is built with (the SQL layer,
sql/core/004_tenant_key.sql, re-creates it unchanged). The index is built once, holding a
lock that blocks writes to memex.memories for the duration (about a second per 200,000
memories).

bench/RESULTS.md, "Big tenants: neighbours by a fixed-width key".

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-05
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0025_tenant_key_index.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    op.execute("drop index memex.memories_tenant_key_recent_idx")
    op.execute("drop function memex._tenant_key(text, text)")
