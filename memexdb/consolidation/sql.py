"""The SQL text of the consolidation domain (sql/consolidation/): condense and dream,
their settings, runs and pause flags, and their pg_cron jobs (memexdb.pg_cron).

The call of each public memex.* function is generated from the SQL catalog into
memexdb/consolidation/calls.py (tools/generate_sql_calls.py) and re-exported here; what follows
it is only what is not such a call, each saying why. Results are read by column name
(psycopg class_row) into the dataclasses of memexdb.types, which mirror the SQL result types.
"""

from __future__ import annotations

from memexdb.consolidation.calls import *  # noqa: F403

# pg_cron's own catalog and functions (cron.*), not memex.* functions:
#
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
