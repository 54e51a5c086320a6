"""History ids that count only the tenant's own history.

The ids of memex.access_log, file_revisions and consolidation_runs were one
database-wide identity each, so the gap between two of a tenant's ids counted what other
tenants did in between (issue 34: B's next access-log id jumped 97 -> 105 across A's seven
reads). Each id is now a number within its tenant's history: 1, 2, 3... in the order
it was written, per (agent, user) for the access log and file revisions (written by
one user's operations) and per agent for consolidation runs (written by background jobs
and restores, rarely; a run number names a run of the agent, as the REST restore takes
it). They come from memex.history_ids (one counter row per agent, user ('' for the
per-agent runs) and table, locked by the inserting transaction until it ends, so two
writers of one user get consecutive numbers and writers of different users never wait
for each other). The SQL layer's memex._history_id trigger fills it on every insert.

Existing rows are numbered per (agent, user), runs per agent, in their old id order; a
consolidation run's restored_by and a restore run's details.run follow. Run numbers
written earlier inside memories' metadata (consolidation.run, dream.run) or file
revisions' details (dream.run) keep the number the run had then. The identity columns
(and their sequences) go; the keys are (agent_id, user_id, id) for the access log and
file revisions, (agent_id, id) for runs. memex.export_history takes the user of its
cursor (p_after_user_id). The audit log (the operator's, in time order across agents;
an agent's admin reads its own agent's entries) keeps its database-wide identity.

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-06
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

TABLES = ("access_log", "file_revisions", "consolidation_runs")


def upgrade() -> None:
    # sql/revisions/0029_tenant_history_ids.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    times = {
        "access_log": "at",
        "file_revisions": "at",
        "consolidation_runs": "started_at",
    }
    op.execute(
        """
        create temporary table run_numbers as
        select r.id as old_id, r.agent_id,
               row_number() over (order by r.started_at, r.agent_id, r.id) as new_id
        from memex.consolidation_runs r
        """
    )
    op.execute(
        """
        update memex.consolidation_runs c set restored_by = n.new_id
        from run_numbers n
        where c.restored_by = n.old_id and n.agent_id = c.agent_id
        """
    )
    op.execute("drop table run_numbers")
    for table in TABLES:
        op.execute(f"drop trigger if exists {table}_history_id on memex.{table}")
        op.execute(f"alter table memex.{table} drop constraint {table}_pkey")
        op.execute(
            f"""
            update memex.{table} t set id = n.new_id
            from (select ctid as row,
                         row_number() over (
                             order by {times[table]}, agent_id, user_id, id) as new_id
                  from memex.{table}) n
            where t.ctid = n.row
            """
        )
        op.execute(f"alter table memex.{table} add primary key (id)")
        op.execute(f"alter table memex.{table} alter column id add generated always as identity")
        op.execute(
            f"select setval(pg_get_serial_sequence('memex.{table}', 'id'),"
            f" greatest((select max(id) from memex.{table}), 1))"
        )
    op.execute("drop function if exists memex._history_id()")
    op.execute(
        "drop function if exists memex.export_history(text, text, text, text, bigint, integer)"
    )
    op.execute("drop table memex.history_ids")
