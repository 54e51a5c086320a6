"""ANN path defaults from the scale benchmark (bench/RESULTS.md, "Scale benchmark"):

- ann_recent_candidates 5000: how many of a large tenant's newest memories memex.search
  re-ranks next to the nearest neighbours when alpha < 1. At alpha 0.7 the best ten of a
  200k tenant are mostly recent memories ranked far below the 200 nearest.
- ivfflat_probes 10 instead of null (ceil(sqrt(lists))): with iterative scans, recall@10
  at 1M memories stops improving beyond ~10 probes for 1,000 and 2,000 lists, while
  latency grows with every probe. A value a DBA has set is kept.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0004_ann_recent_candidates.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    op.execute("delete from memex.settings where name = 'ann_recent_candidates'")
    op.execute(
        "update memex.settings set value = 'null' where name = 'ivfflat_probes' and value = '10'"
    )
