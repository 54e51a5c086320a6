"""The SQL text of the files domain (sql/files/): file memory, its revisions, the
access log and passages.

The call of each public memex.* function is generated from the SQL catalog into
memexdb/files/calls.py (tools/generate_sql_calls.py) and re-exported here; what follows
it is only what is not such a call, each saying why. Results are read by column name
(psycopg class_row) into the dataclasses of memexdb.types, which mirror the SQL result types.
"""

from __future__ import annotations

from memexdb.files.calls import *  # noqa: F403

# Of an import's access-log entries, those older than the retention window: the next
# memex.maintenance() prunes them (docs/operations.md). Arithmetic over the import's own
# timestamps and one setting (memex._setting), not a tenant's rows: no public function.
ACCESS_LOG_EXPIRING = """
select count(*)::integer from unnest(%(ats)s::timestamptz[]) a
where a < now() - make_interval(
    days => memex._setting('access_log_retention_days', '90')::integer)
"""
