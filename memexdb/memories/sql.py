"""The SQL text of the memories domain (sql/memories/): memories, their search, export
and import.

The call of each public memex.* function is generated from the SQL catalog into
memexdb/memories/calls.py (tools/generate_sql_calls.py) and re-exported here; what follows
it is only what is not such a call, each saying why. Results are read by column name
(psycopg class_row) into the dataclasses of memexdb.types, which mirror the SQL result types.
"""

from __future__ import annotations

from memexdb.memories.calls import *  # noqa: F403
