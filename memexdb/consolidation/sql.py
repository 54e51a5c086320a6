"""The SQL call text of the consolidation domain (sql/consolidation/): condense and dream,
their settings, runs and pause flags, and their pg_cron jobs (memexdb.pg_cron).

Each statement calls a memex.* function with named arguments (the SQL API, sql/*.sql, is the
only place with logic); results are read by column name (psycopg class_row) into the
dataclasses of memexdb.types, which mirror the SQL result types.
"""

from __future__ import annotations

IMPORT_CONSOLIDATION_RUNS = "select memex.import_consolidation_runs(p_records => %(records)s)"

# --- Consolidation ---

CONSOLIDATE_TENANT = """
select * from memex.consolidate_tenant(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_dry_run => %(dry_run)s,
    p_force => %(force)s, p_summary => %(summary)s, p_source_ids => %(source_ids)s::uuid[])
"""
CONSOLIDATE_DUE = "select * from memex.consolidate_due(p_dry_run => %(dry_run)s)"
DREAM_TENANT = """
select * from memex.dream_tenant(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_dry_run => %(dry_run)s,
    p_force => %(force)s, p_edits => %(edits)s)
"""
DREAM_DUE = "select * from memex.dream_due(p_dry_run => %(dry_run)s, p_edits => %(edits)s)"
DREAM_PLAN = """
select * from memex.dream_plan(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_force => %(force)s)
"""
RESTORE_CONSOLIDATION = (
    "select * from memex.restore_consolidation(p_run_id => %(run_id)s, p_agent_id => %(agent_id)s)"
)
DREAM_CONFIG = "select memex.dream_config()"
SET_DREAM_CONFIG = "select memex.set_dream_config(p_changes => %(changes)s)"
CONSOLIDATION_HISTORY = """
select * from memex.consolidation_history(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_limit => %(limit)s,
    p_before => %(before)s)
"""
DREAM_USERS = """
select * from memex.dream_users(
    p_agent_id => %(agent_id)s, p_limit => %(limit)s, p_after_agent_id => %(after_agent_id)s,
    p_after_user_id => %(after_user_id)s)
"""
SET_DREAM_PAUSED = """
select memex.set_dream_paused(
    p_agent_id => %(agent_id)s, p_user_id => %(user_id)s, p_paused => %(paused)s)
"""

# pg_cron (memexdb.pg_cron) in this database: may this role use it, and does its scheduler
# run here? Its launcher connects to the database of cron.database_name, where alone jobs
# run; `running` is null when this role cannot see other roles' backend types (neither a
# superuser nor in pg_read_all_stats). No row: not installed.
PG_CRON = """
select e.extversion as version,
       coalesce(has_schema_privilege(to_regnamespace('cron'), 'usage'), false) as usable,
       (select case when bool_or(a.backend_type = 'pg_cron launcher'
                                 and a.datname = current_database()) then true
                    when bool_and(a.backend_type is not null) then false end
        from pg_stat_activity a) as running
from pg_extension e where e.extname = 'pg_cron'
"""
FUNCTION_EXISTS = "select to_regproc(%(function)s) is not null"
CRON_SCHEDULE = "select cron.schedule(%(name)s, %(schedule)s, %(command)s)"
# The memex jobs in cron.job for this database (a role sees its own; a superuser, all).
CRON_JOBS = """
select jobid, jobname, schedule, command, active, username from cron.job
where jobname = any(%(names)s) and database = current_database()
order by jobname, username
"""
# (materialized: cron.unschedule only for the rows the filter keeps)
CRON_UNSCHEDULE = """
with ours as materialized (
    select jobid, jobname from cron.job
    where jobname = any(%(names)s) and database = current_database())
select jobname from ours where cron.unschedule(jobid) order by jobname
"""
CRON_ACTIVE = """
select jobname from cron.job
where jobname = any(%(names)s) and database = current_database() and active
"""
