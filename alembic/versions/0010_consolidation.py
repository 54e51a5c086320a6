"""Consolidation ("dreaming"): old episodic memories condensed into summaries, files
cleaned up, and the queue that embeds what SQL wrote.

- memex.consolidation_runs: one row per run on a tenant (condensing memories, dreaming
  over files, a dry run, a restore): when, memories and files in and out, files touched,
  status, error, the summary written and the plan (details).
- memex.embed_queue: memories waiting for an embedding of their own text (a summary is
  searchable at once by its sources' centroid, and queued); NOTIFY memex_embed tells the
  runtime's embed worker.
- memex.tenants: dream_paused (an operator's pause of both) and last_dreamed_at (the
  last dream over the tenant's files).
- memories.superseded_by loses its foreign key: lineage is kept by the functions that
  change it (memex.forget of a summary brings its sources back instead of orphaning
  them), and an import can load archived memories before their summary.
- memex.memory_record gains source_ids, superseded_by and archived_at.

Row-level security and grants for the new tables live in sql/ (990, 999).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0010_consolidation.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    for table in ("consolidation_runs",):
        op.execute(
            f"""
            do $$
            declare p record;
            begin
                for p in select policyname from pg_policies
                         where schemaname = 'memex' and tablename = '{table}' loop
                    execute format('drop policy %I on memex.{table}', p.policyname);
                end loop;
            end
            $$
            """
        )
    op.execute(
        "alter type memex.memory_record drop attribute source_ids,"
        " drop attribute superseded_by, drop attribute archived_at"
    )
    op.execute("drop index memex.memories_superseded_by_idx")
    op.execute(
        "update memex.memories set superseded_by = null where superseded_by is not null"
        " and superseded_by not in (select id from memex.memories)"
    )
    op.execute(
        "alter table memex.memories add constraint memories_superseded_by_fkey"
        " foreign key (superseded_by) references memex.memories (id) on delete set null"
    )
    op.execute("alter table memex.tenants drop column dream_paused, drop column last_dreamed_at")
    op.execute("drop table memex.embed_queue, memex.consolidation_runs")
