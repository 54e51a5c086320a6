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
    ConsolidateDueRequest,
    ConsolidateRequest,
    DreamConfig,
    DreamConfigOut,
    DreamDueRequest,
    DreamPlanQuery,
    DreamTenantRequest,
    DreamUserList,
    DreamUserOut,
    DreamUsersQuery,
    JobSchedule,
    PausedOut,
    PauseRequest,
    RunAgent,
    RunList,
    RunOut,
    RunRef,
    RunsQuery,
    TenantPause,
    encode_tenant_cursor,
)
from memexdb.core import sql as core_sql
from memexdb.error_models import ErrorResponse, validated
from memexdb.fields import NoArguments, TenantQuery
from memexdb.operation import Operation, Paging, Reply, Route, fetch_first, fetch_rows
from memexdb.paging import after_params, next_key
from memexdb.session import Session
from memexdb.types import ConsolidationRun, DreamPlan, DreamUser


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


consolidation_runs = fetch_rows(ConsolidationRun, sql.CONSOLIDATION_HISTORY)
restore_consolidation = fetch_first(ConsolidationRun, sql.RESTORE_CONSOLIDATION)


async def dream_users(session: Session, query: DreamUsersQuery) -> list[DreamUser]:
    return await session.fetch(
        DreamUser,
        sql.DREAM_USERS,
        {
            **query.model_dump(exclude={"after"}),
            **after_params(query.after_tenant(), "after_agent_id", "after_user_id"),
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


# (declared in the table's order: their paths' methods GET before PUT, as a 405's Allow
# header lists them; then the Python API's alone, with no REST or MCP surface here)
DREAM_CONFIG = Operation(
    name="dream_config",
    summary="The consolidation settings (dream_* in memex.settings, else their defaults)",
    request=NoArguments,
    run=dream_config,
    response=DreamConfigOut,
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
    sql=("memex.restore_consolidation",),
    access="write",
    domain="consolidation",
    rest=Route(
        "POST",
        "/v1/admin/dream/runs/{run_id:int}/restore",
        "The restore run. The restore sticks: the memories it brought back are not condensed"
        " again (nor counted towards the threshold) until a memory newer than the restore"
        " arrives for the tenant, or an operator forces a run (`force`).",
        source="query",
        wire=RunAgent,
        errors=(
            Reply(404, "No such run in this caller's scope", ErrorResponse),
            Reply(409, "Not a completed condense run", ErrorResponse),
        ),
    ),
)


async def read_dream_config(session: Session, _: NoArguments) -> DreamConfigOut:
    return await read_config(session)


async def _tenant_run(
    session: Session, query: str, agent_id: str, user_id: str, **arguments: Any
) -> ConsolidationRun | None:
    """One tenant's consolidation run (or plan); None when another runner holds it."""
    validated(TenantQuery, agent_id=agent_id, user_id=user_id)
    rows: list[ConsolidationRun] = await session.fetch(
        ConsolidationRun, query, {"agent_id": agent_id, "user_id": user_id, **arguments}
    )
    run = rows[0] if rows else None
    return run if run is not None and run.status is not None else None


async def consolidate(session: Session, request: ConsolidateRequest) -> ConsolidationRun | None:
    ids = request.source_ids
    return await _tenant_run(
        session,
        sql.CONSOLIDATE_TENANT,
        request.agent_id,
        request.user_id,
        dry_run=request.dry_run,
        force=request.force,
        summary=request.summary,
        source_ids=[str(i) for i in ids] if ids is not None else None,
    )


async def dream(session: Session, request: DreamTenantRequest) -> ConsolidationRun | None:
    edits = request.edits
    return await _tenant_run(
        session,
        sql.DREAM_TENANT,
        request.agent_id,
        request.user_id,
        dry_run=request.dry_run,
        force=request.force,
        edits=Jsonb(edits) if edits is not None else None,
    )


consolidate_due = fetch_rows(ConsolidationRun, sql.CONSOLIDATE_DUE)


async def dream_due(session: Session, request: DreamDueRequest) -> list[ConsolidationRun]:
    edits = request.edits
    return await session.fetch(
        ConsolidationRun,
        sql.DREAM_DUE,
        {"dry_run": request.dry_run, "edits": Jsonb(edits) if edits is not None else None},
    )


async def dream_plan(session: Session, query: DreamPlanQuery) -> list[DreamPlan]:
    if query.agent_id is not None or query.user_id is not None:
        validated(TenantQuery, agent_id=query.agent_id, user_id=query.user_id)
    return await session.fetch(DreamPlan, sql.DREAM_PLAN, query.model_dump())


READ_DREAM_CONFIG = Operation(
    name="read_dream_config",
    summary="The consolidation settings as any caller reads them (AsyncMemex.dream_config)",
    request=NoArguments,
    run=read_dream_config,
    sql=("memex.dream_config",),
    access="read",
    domain="consolidation",
)

CONSOLIDATE = Operation(
    name="consolidate",
    summary="Condense one tenant's oldest episodic memories if it is due (or forced)",
    request=ConsolidateRequest,
    run=consolidate,
    sql=("memex.consolidate_tenant",),
    access="write",
    domain="consolidation",
)

DREAM = Operation(
    name="dream",
    summary="Tidy one tenant's files if it is due (or forced), with the LLM's edits",
    request=DreamTenantRequest,
    run=dream,
    sql=("memex.dream_tenant",),
    access="write",
    domain="consolidation",
)

CONSOLIDATE_DUE = Operation(
    name="consolidate_due",
    summary="One consolidation tick over every tenant",
    request=ConsolidateDueRequest,
    run=consolidate_due,
    sql=("memex.consolidate_due",),
    access="admin",
    domain="consolidation",
)

DREAM_DUE = Operation(
    name="dream_due",
    summary="One tick of dreaming over files, every tenant",
    request=DreamDueRequest,
    run=dream_due,
    sql=("memex.dream_due",),
    access="admin",
    domain="consolidation",
)

DREAM_PLAN = Operation(
    name="dream_plan",
    summary="The files the next dream reads: of the due tenants, or of one",
    request=DreamPlanQuery,
    run=dream_plan,
    sql=("memex.dream_plan",),
    access="write",
    domain="consolidation",
)
