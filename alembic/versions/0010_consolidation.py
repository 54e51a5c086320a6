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

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        create table memex.consolidation_runs (
            id            bigint generated always as identity primary key,
            agent_id      text not null,
            user_id       text not null,
            kind          text not null check (kind in ('condense', 'dream', 'restore')),
            status        text not null
                check (status in ('running', 'done', 'dry_run', 'nothing', 'failed',
                                  'restored')),
            actor         text not null,
            started_at    timestamptz not null default clock_timestamp(),
            finished_at   timestamptz,
            memories_in   integer not null default 0,
            memories_out  integer not null default 0,
            files_in      integer not null default 0,
            files_out     integer not null default 0,
            files_touched integer not null default 0,
            summary_id    uuid,
            restored_by   bigint,
            error         text,
            details       jsonb not null default '{}'
        )
        """
    )
    op.execute(
        "create index consolidation_runs_tenant_idx"
        " on memex.consolidation_runs (agent_id, user_id, started_at)"
    )
    op.execute(
        """
        create table memex.embed_queue (
            memory_id       uuid primary key
                            references memex.memories (id) on delete cascade,
            enqueued_at     timestamptz not null default clock_timestamp(),
            attempts        integer not null default 0,
            next_attempt_at timestamptz not null default clock_timestamp(),
            last_error      text
        )
        """
    )
    op.execute("create index embed_queue_due_idx on memex.embed_queue (next_attempt_at)")
    op.execute(
        "alter table memex.tenants"
        " add column dream_paused boolean not null default false,"
        " add column last_dreamed_at timestamptz"
    )
    op.execute("alter table memex.memories drop constraint memories_superseded_by_fkey")
    op.execute(
        "create index memories_superseded_by_idx on memex.memories (superseded_by)"
        " where superseded_by is not null"
    )
    op.execute(
        "alter type memex.memory_record add attribute source_ids uuid[],"
        " add attribute superseded_by uuid, add attribute archived_at timestamptz"
    )


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
