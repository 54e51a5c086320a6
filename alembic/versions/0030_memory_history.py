"""Memory that knows time (issue 36): a history for every memory, supersession, validity.

- memex.memory_revisions: one row per change of a memory (store, update, supersede,
  superseded, archive, restore, revert, import), numbered 1..n per memory, each a full
  snapshot of what the memory said then (content, type, importance, metadata, expiry,
  validity, supersession links, archive time) with the fields that changed, who (actor)
  and when (at). Its id is a number per (agent, user), as the other history tables' ids
  (memex.history_ids, counter kind 'memory_revisions'; primary key (agent_id, user_id,
  id)), so that a tenant's ids count its own history only. Written only by the SQL
  layer's security definer functions; tenants read their own (row-level security, added
  by the re-applied SQL layer) and never update or delete one. Deleted with their memory
  (forget, erase_user: on delete cascade).
- memex.memories gains valid_from / valid_to (when the fact held; null valid_from: from
  created_at, null valid_to: open-ended), superseded_at (when a newer memory superseded it;
  superseded_by already names the successor) and supersedes (the ids it superseded).
- Every existing non-file memory gets its revision 1 (operation store) from its current
  state, so that every memory has a history.
- memex.memories gains restored_at, for restores that stick: memex.restore_consolidation
  sets it on the sources it brings back, and consolidation leaves them until a memory
  newer than the restore arrives for the tenant (or an operator forces a run).
- The old signatures of the functions that gain parameters are dropped; the re-applied
  SQL layer creates the new ones.

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-06
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0030_memory_history.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)

def downgrade() -> None:
    op.execute(
        """
        do $$
        declare p record;
        begin
            for p in select policyname from pg_policies
                     where schemaname = 'memex' and tablename = 'memory_revisions' loop
                execute format('drop policy %I on memex.memory_revisions', p.policyname);
            end loop;
        end
        $$
        """
    )
    op.execute("drop table memex.memory_revisions")
    op.execute("delete from memex.history_ids where kind = 'memory_revisions'")
    op.execute(
        """
        alter table memex.history_ids
            drop constraint history_ids_kind_check,
            add constraint history_ids_kind_check
                check (kind in ('access_log', 'file_revisions', 'consolidation_runs'))
        """
    )
    op.execute(
        """
        alter table memex.memories
            drop constraint memories_valid_range_check,
            drop column valid_from,
            drop column valid_to,
            drop column superseded_at,
            drop column supersedes,
            drop column restored_at
        """
    )
