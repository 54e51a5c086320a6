"""The SQL text of the operations domain (sql/operations/): maintenance, settings,
metrics, schema state, lock waits and the stats of `memexdb status` and the console.

The call of each public memex.* function is generated from the SQL catalog into
memexdb/health/calls.py (tools/generate_sql_calls.py) and re-exported here; what follows
it is only what is not such a call, each saying why. Results are read by column name
(psycopg class_row) into the dataclasses of memexdb.types, which mirror the SQL result types.
"""

from __future__ import annotations

from memexdb.health.calls import *  # noqa: F403

# `memexdb status`: a server setting and a table read, not function calls
SERVER_VERSION = "show server_version"
SCHEMA_REVISION = (
    "select version_num from memex.alembic_version"
    " where to_regclass('memex.alembic_version') is not null"
)
