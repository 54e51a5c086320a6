"""The SQL call text of the operations domain (sql/operations/): maintenance, settings,
metrics, schema state, lock waits and the stats of `memexdb status` and the console.

Each statement calls a memex.* function with named arguments (the SQL API, sql/*.sql, is the
only place with logic); results are read by column name (psycopg class_row) into the
dataclasses of memexdb.types, which mirror the SQL result types.
"""

from __future__ import annotations

MAINTENANCE = "select * from memex.maintenance()"

SET_SETTING = "select memex.set_setting(p_name => %(name)s, p_value => %(value)s)"

# GET /metrics (operator) and GET /health/ready (no caller needed)
METRICS_SNAPSHOT = "select metric, kind, status, value from memex.metrics_snapshot()"
SCHEMA_STATE = "select revision, migrating from memex.schema_state()"
# who waits for a lock on a memex table, and behind whom (readiness)
LOCK_WAITS = (
    "select pid, role, relation, mode, waiting_seconds, blocked_by, blocker_roles"
    " from memex.lock_waits()"
)

# the admin console's overview (operator)
OVERVIEW_STATS = """
select metric, agent_id, user_id, day, kind, value
from memex.overview_stats(p_days => %(days)s, p_tenants => %(tenants)s)
"""

# `memexdb status`
SERVER_VERSION = "show server_version"
SCHEMA_REVISION = (
    "select version_num from memex.alembic_version"
    " where to_regclass('memex.alembic_version') is not null"
)
TENANT_STATS = "select tenants, memories, indexed, waiting from memex.tenant_stats()"
# The admin console's tenant pages (memexdb.console)
AGENT_STATS = """
select * from memex.agent_stats(
    p_agent_id => %(agent_id)s, p_limit => %(limit)s, p_after => %(after)s)
"""
USER_STATS = """
select * from memex.user_stats(
    p_agent_id => %(agent_id)s, p_limit => %(limit)s, p_after => %(after)s)
"""
