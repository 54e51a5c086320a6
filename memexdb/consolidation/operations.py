"""The admin operations of consolidation ("dreaming"), at MemexAI's paths: the settings
(dream_config, set_dream_config), the runs (consolidation_runs, restore_consolidation)
and the tenants' status and pause flags (dream_users, set_dream_paused).

Each is a function of a Session and its validated request (one memex.* call) and its
declaration (memexdb.operation), from which the Python methods and the REST endpoints
(/v1/admin/dream/...) are built. SQL checks the caller: an admin, but for the runs
(read access to their tenants) and undoing one (write access). A run now (POST
/v1/admin/dream/run) is not here: it runs the consolidation loop
(memexdb.consolidation.run_now), not one statement.
"""

from __future__ import annotations

from typing import Any

from psycopg.types.json import Jsonb

from memexdb import pg_cron
from memexdb.consolidation import sql
from memexdb.consolidation.models import (
    DreamConfig,
    DreamConfigOut,
    DreamUserList,
    DreamUserOut,
    DreamUsersQuery,
    JobSchedule,
    PausedOut,
    PauseRequest,
    RunList,
    RunOut,
    RunRef,
    RunsQuery,
    TenantPause,
    encode_tenant_cursor,
)
from memexdb.core import sql as core_sql
from memexdb.error_models import ErrorResponse
from memexdb.fields import NoArguments
from memexdb.operation import Operation, Paging, Reply, Route
from memexdb.paging import next_key
from memexdb.session import Session
from memexdb.types import ConsolidationRun, DreamUser


async def read_config(session: Session) -> DreamConfigOut:
    """The settings as memex.dream_config gives them to any caller (the scheduler, the
    console), with who runs each job here."""
    rows = await session.fetch(None, sql.DREAM_CONFIG)
    return await _with_schedules(session, rows[0])


async def _with_schedules(session: Session, config: dict[str, Any]) -> DreamConfigOut:
    """`config` with who runs condensing and dreaming in this database: pg_cron where its
    job is active here, else this process's service if its settings offer the job (one
    process per database runs it), else nobody; nobody at all while not `enabled`."""
    jobs = pg_cron.CONSOLIDATION
    names = [job.name for job in jobs.values()]
    async with session.pool.connection() as conn, conn.transaction():
        # cron.job shows a role its own jobs: those `memexdb schedule` registered with the
        # login role, which the pool's connections leave for memex_app (memexdb.db) and
        # take back for this catalog read alone
        await conn.execute("set local role none")
        by_cron = await pg_cron.runs(conn, names)
    schedules: dict[str, JobSchedule] = {}
    for name, job in jobs.items():
        if not config["enabled"]:
            schedules[name] = "disabled"
        elif job.name in by_cron:
            schedules[name] = "pg_cron"
        elif name in session.scheduled:
            schedules[name] = "service"
        else:
            schedules[name] = "not scheduled"
    return DreamConfigOut.model_validate(config | schedules)


async def dream_config(session: Session, _: NoArguments) -> DreamConfigOut:
    # memex.dream_config itself asks for no access: the endpoint is for admins of every
    # agent, as the other settings
    await session.fetch(
        None, core_sql.AUTHORIZE, {"agent_id": None, "user_id": None, "need": "admin"}
    )
    return await read_config(session)


async def set_dream_config(session: Session, request: DreamConfig) -> DreamConfigOut:
    changes = {"changes": Jsonb(request.changes())}
    rows = await session.fetch(None, sql.SET_DREAM_CONFIG, changes)
    return await _with_schedules(session, rows[0])


async def consolidation_runs(session: Session, query: RunsQuery) -> list[ConsolidationRun]:
    return await session.fetch(ConsolidationRun, sql.CONSOLIDATION_HISTORY, query.model_dump())


async def restore_consolidation(session: Session, ref: RunRef) -> ConsolidationRun:
    rows: list[ConsolidationRun] = await session.fetch(
        ConsolidationRun, sql.RESTORE_CONSOLIDATION, ref.model_dump()
    )
    return rows[0]


async def dream_users(session: Session, query: DreamUsersQuery) -> list[DreamUser]:
    after = query.after_tenant()
    return await session.fetch(
        DreamUser,
        sql.DREAM_USERS,
        {
            **query.model_dump(exclude={"after"}),
            "after_agent_id": after[0] if after else None,
            "after_user_id": after[1] if after else None,
        },
    )


async def set_dream_paused(session: Session, request: TenantPause) -> bool:
    rows = await session.fetch(None, sql.SET_DREAM_PAUSED, request.model_dump())
    return bool(rows[0])


def _runs(query: RunsQuery, rows: list[ConsolidationRun]) -> RunList:
    last = next_key(rows, query.limit, lambda row: row.id)
    return RunList(runs=[RunOut.model_validate(r) for r in rows], next_before=last)


def _users(query: DreamUsersQuery, rows: list[DreamUser]) -> DreamUserList:
    last = next_key(rows, query.limit, lambda row: row)
    return DreamUserList(
        users=[DreamUserOut.model_validate(r) for r in rows],
        next_after=encode_tenant_cursor(last.agent_id, last.user_id) if last else None,
    )


DREAM_CONFIG = Operation(
    name="dream_config",
    summary="The consolidation settings (dream_* in memex.settings, else their defaults)",
    request=NoArguments,
    run=dream_config,
    response=DreamConfigOut,
    answer=lambda _, config: config,
    sql=("memex.dream_config",),
    access="admin",
    domain="consolidation",
    rest=Route("GET", "/v1/admin/dream/config", "The configuration", source="path"),
)

SET_DREAM_CONFIG = Operation(
    name="set_dream_config",
    summary="Change consolidation settings (any of them; audited)",
    request=DreamConfig,
    run=set_dream_config,
    response=DreamConfigOut,
    answer=lambda _, config: config,
    sql=("memex.set_dream_config",),
    access="admin",
    domain="consolidation",
    rest=Route("PUT", "/v1/admin/dream/config", "The whole configuration after the change"),
)

DREAM_USERS = Operation(
    name="dream_users",
    summary="Each tenant's consolidation status: paused, last dream, last run, run counts",
    request=DreamUsersQuery,
    run=dream_users,
    response=DreamUserList,
    answer=_users,
    sql=("memex.dream_users",),
    access="admin",
    domain="consolidation",
    pages=Paging("after", "next_after"),
    rest=Route("GET", "/v1/admin/dream/users", "A page of tenants", source="query"),
)

SET_DREAM_PAUSED = Operation(
    name="set_dream_paused",
    summary="Pause or resume consolidation of one user of an agent",
    request=TenantPause,
    run=set_dream_paused,
    response=PausedOut,
    answer=lambda request, paused: PausedOut(
        agent_id=request.agent_id, user_id=request.user_id, paused=paused
    ),
    sql=("memex.set_dream_paused",),
    access="admin",
    domain="consolidation",
    rest=Route(
        "PUT",
        "/v1/admin/dream/users/{user_id}/paused",
        "Whether it is paused now",
        wire=PauseRequest,
        path_params={"user_id": {"type": "string"}},
        errors=(Reply(404, "The tenant has no memories", ErrorResponse),),
    ),
)

CONSOLIDATION_RUNS = Operation(
    name="consolidation_runs",
    summary="Consolidation runs, newest first: of a tenant, an agent or every tenant",
    request=RunsQuery,
    run=consolidation_runs,
    response=RunList,
    answer=_runs,
    sql=("memex.consolidation_history",),
    access="read",
    domain="consolidation",
    pages=Paging("before", "next_before"),
    rest=Route("GET", "/v1/admin/dream/runs", "A page of runs", source="query"),
)

RESTORE_CONSOLIDATION = Operation(
    name="restore_consolidation",
    summary="Undo a condense run: its memories live again, its summary archived",
    request=RunRef,
    run=restore_consolidation,
    response=RunOut,
    answer=lambda _, run: RunOut.model_validate(run),
    sql=("memex.restore_consolidation",),
    access="write",
    domain="consolidation",
    rest=Route(
        "POST",
        "/v1/admin/dream/runs/{run_id:int}/restore",
        "The restore run",
        source="path",
        path_params={"run_id": {"type": "integer"}},
        errors=(
            Reply(404, "No such run in this caller's scope", ErrorResponse),
            Reply(409, "Not a completed condense run", ErrorResponse),
        ),
    ),
)

# (in the order of their paths' methods: GET before PUT, as a 405's Allow header lists them)
OPERATIONS: tuple[Operation[Any, Any], ...] = (
    DREAM_CONFIG,
    SET_DREAM_CONFIG,
    DREAM_USERS,
    SET_DREAM_PAUSED,
    CONSOLIDATION_RUNS,
    RESTORE_CONSOLIDATION,
)
