"""File memory: files (memories with a virtual path), their revisions, and an access log.

- memories.path: a file is a memory with a virtual path (`user/profile.md`), unique per
  tenant (a partial unique index), so that memex.search ranks files and memories alike.
  Its current content lives in memories (content, embedding, tsv); null for plain memories.
- memex.file_revisions: a full snapshot of every write, patch, delete and restore of a
  file (revision numbers per file, from 1; a delete keeps no content).
- memex.access_log: every read and write of a file (who, what, which path, when), kept
  settings.access_log_retention_days (default 90) and pruned by memex.maintenance().
- memex.file_record, memex.file_entry, memex.smart_read_result: what the file functions
  return; memex.maintenance_result.access_log_rows_deleted.

Row-level security and grants for the new tables live in sql/ (990, 999).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0009_file_memory.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    for table in ("file_revisions", "access_log"):
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
    op.execute("alter type memex.maintenance_result drop attribute access_log_rows_deleted")
    op.execute("drop type memex.file_record, memex.file_entry, memex.smart_read_result cascade")
    op.execute("drop table memex.access_log, memex.file_revisions")
    op.execute("delete from memex.memories where path is not null")
    op.execute("drop index memex.memories_path_idx")
    op.execute("alter table memex.memories drop column path")
