"""The operations of the operations domain (sql/operations/, the `operations` REST tag)
that the Python API runs: ping, readiness (schema_state, lock_waits), maintenance,
metrics, settings and the tenants' stats of the admin console.

None is served over REST or MCP from this table (GET /health, /metrics and the console
are hand-written pages over these methods): each is declared so that AsyncMemex runs it
as it runs every other operation (`self.call`), validated once, one memex.* call.
"""

from __future__ import annotations

from psycopg.types.json import Jsonb

from memexdb.core import sql as core_sql
from memexdb.fields import NoArguments
from memexdb.health import sql
from memexdb.health.models import (
    AgentStatsQuery,
    BlockedLock,
    OverviewFigure,
    OverviewQuery,
    SettingWrite,
    UserStatsQuery,
)
from memexdb.operation import Operation, fetch_first, fetch_rows
from memexdb.session import Session
from memexdb.types import AgentStats, MaintenanceResult, MetricFigure, SchemaState, UserStats


async def ping(session: Session, _: NoArguments) -> None:
    # no caller: whether the database answers at all
    await session.fetch(None, core_sql.PING, enter=False)


metrics_snapshot = fetch_rows(MetricFigure, sql.METRICS_SNAPSHOT)
schema_state = fetch_first(SchemaState, sql.SCHEMA_STATE, enter=False)
lock_waits = fetch_rows(BlockedLock, sql.LOCK_WAITS, enter=False)
maintenance = fetch_first(MaintenanceResult, sql.MAINTENANCE)


async def set_setting(session: Session, request: SettingWrite) -> None:
    await session.fetch(
        None, sql.SET_SETTING, {"name": request.name, "value": Jsonb(request.value)}
    )


agent_stats = fetch_rows(AgentStats, sql.AGENT_STATS)
user_stats = fetch_rows(UserStats, sql.USER_STATS)
overview_stats = fetch_rows(OverviewFigure, sql.OVERVIEW_STATS)


PING = Operation(
    name="ping",
    summary="Whether the database answers (no caller needed)",
    request=NoArguments,
    run=ping,
    sql=(),
    access="read",
    domain="operations",
)

METRICS_SNAPSHOT = Operation(
    name="metrics_snapshot",
    summary="The database's figures for GET /metrics",
    request=NoArguments,
    run=metrics_snapshot,
    sql=("memex.metrics_snapshot",),
    access="operator",
    domain="operations",
)

SCHEMA_STATE = Operation(
    name="schema_state",
    summary="The schema's revision and whether a migration runs now (no caller needed)",
    request=NoArguments,
    run=schema_state,
    sql=("memex.schema_state",),
    access="read",
    domain="operations",
)

LOCK_WAITS = Operation(
    name="lock_waits",
    summary="Sessions waiting for a lock on a memex table, and who blocks them",
    request=NoArguments,
    run=lock_waits,
    sql=("memex.lock_waits",),
    access="read",
    domain="operations",
)

MAINTENANCE = Operation(
    name="maintenance",
    summary="Delete expired memories and stale rate-limit rows; move grown tenants to ANN",
    request=NoArguments,
    run=maintenance,
    sql=("memex.maintenance",),
    access="operator",
    domain="operations",
)

SET_SETTING = Operation(
    name="set_setting",
    summary="Write an operator setting (memex.settings)",
    request=SettingWrite,
    run=set_setting,
    sql=("memex.set_setting",),
    access="operator",
    domain="operations",
)

AGENT_STATS = Operation(
    name="agent_stats",
    summary="Agents with their users and memories by type, archived, expired and files",
    request=AgentStatsQuery,
    run=agent_stats,
    sql=("memex.agent_stats",),
    access="admin",
    domain="operations",
)

USER_STATS = Operation(
    name="user_stats",
    summary="The users of an agent with their memories, files and consolidation pause",
    request=UserStatsQuery,
    run=user_stats,
    sql=("memex.user_stats",),
    access="admin",
    domain="operations",
)

OVERVIEW_STATS = Operation(
    name="overview_stats",
    summary="The console overview's figures: the largest tenants, growth, consolidation",
    request=OverviewQuery,
    run=overview_stats,
    sql=("memex.overview_stats",),
    access="operator",
    domain="operations",
)
