"""What the SQL layer last applied was, so that a migrate with nothing to change changes
nothing.

memexdb migrate re-applies the SQL layer (sql/manifest.txt) after `upgrade head`. Its
access rules re-create row-level security policies, which take ACCESS EXCLUSIVE locks on
the tenant tables: a session that keeps a transaction open over memex.memories (an idle
client of the service's role) made every migrate, and behind its queued lock every
tenant's request, wait. memex.sql_layer_state holds one row: the sha256 of the layer's
files (and their privileges declarations) and a fingerprint of the catalog they produced
(functions, their owners, grants and settings; tables' grants and row-level security;
policies; triggers). migrate skips re-applying when both match, so re-applying an
unchanged layer takes no table lock; a changed file, or a catalog changed by hand, makes
it re-apply as before.

Read and written by the migrating role only (the owner; no grant to memex_app or
memex_tenant).

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-06
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0027_sql_layer_state.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    op.execute("drop table memex.sql_layer_state")
