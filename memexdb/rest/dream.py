"""Consolidation ("dreaming") operator endpoints, at MemexAI's paths: the configuration,
the tenants' status and pause flags, the runs, and undoing a run. Admin
callers; SQL checks it (memex.set_dream_config, memex.dream_users, ...)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from memexdb.paging import next_key
from memexdb.params import (
    DreamConfig,
    DreamConfigOut,
    DreamUserList,
    DreamUserOut,
    DreamUsersQuery,
    ErrorResponse,
    PausedOut,
    PauseRequest,
    RunList,
    RunOut,
    RunsQuery,
    encode_tenant_cursor,
)
from memexdb.rest.endpoint import Endpoint, Reply
from memexdb.rest.parsing import body_of, json_of, memex_of, query_of

ADMIN_ALL = "admin"


async def get_config(request: Request) -> Response:
    memex = memex_of(request)
    await memex.authorize(None, None, ADMIN_ALL)
    return json_of(await memex.dream_config())


async def put_config(request: Request) -> Response:
    body = await body_of(request, DreamConfig)
    return json_of(await memex_of(request).set_dream_config(**body.changes()))


async def users(request: Request) -> Response:
    query = query_of(request, DreamUsersQuery)
    rows = await memex_of(request).dream_users(
        query.agent_id, limit=query.limit, after=query.after_tenant()
    )
    last = next_key(rows, query.limit, lambda row: row)
    return json_of(
        DreamUserList(
            users=[DreamUserOut.model_validate(r) for r in rows],
            next_after=encode_tenant_cursor(last.agent_id, last.user_id) if last else None,
        )
    )


async def pause(request: Request) -> Response:
    body = await body_of(request, PauseRequest)
    user_id = request.path_params["user_id"]
    paused = await memex_of(request).set_dream_paused(body.agent_id, user_id, body.paused)
    return json_of(PausedOut(agent_id=body.agent_id, user_id=user_id, paused=paused))


async def runs(request: Request) -> Response:
    query = query_of(request, RunsQuery)
    rows = await memex_of(request).consolidation_runs(**query.model_dump())
    last = next_key(rows, query.limit, lambda row: row.id)
    return json_of(RunList(runs=[RunOut.model_validate(r) for r in rows], next_before=last))


async def restore(request: Request) -> Response:
    restored = await memex_of(request).restore_consolidation(request.path_params["run_id"])
    return json_of(RunOut.model_validate(restored))


ENDPOINTS = (
    Endpoint(
        "GET",
        "/v1/admin/dream/config",
        get_config,
        "The consolidation settings (dream_* in memex.settings, else their defaults)",
        Reply(200, "The configuration", DreamConfigOut),
    ),
    Endpoint(
        "PUT",
        "/v1/admin/dream/config",
        put_config,
        "Change consolidation settings (any of them; audited)",
        Reply(200, "The whole configuration after the change", DreamConfigOut),
        body=DreamConfig,
    ),
    Endpoint(
        "GET",
        "/v1/admin/dream/users",
        users,
        "Each tenant's consolidation status: paused, last dream, last run, run counts",
        Reply(200, "A page of tenants", DreamUserList),
        query=DreamUsersQuery,
    ),
    Endpoint(
        "PUT",
        "/v1/admin/dream/users/{user_id}/paused",
        pause,
        "Pause or resume consolidation of one user of an agent",
        Reply(200, "Whether it is paused now", PausedOut),
        body=PauseRequest,
        path_params={"user_id": {"type": "string"}},
        errors=(Reply(404, "The tenant has no memories", ErrorResponse),),
    ),
    Endpoint(
        "GET",
        "/v1/admin/dream/runs",
        runs,
        "Consolidation runs, newest first: of a tenant, an agent or every tenant",
        Reply(200, "A page of runs", RunList),
        query=RunsQuery,
    ),
    Endpoint(
        "POST",
        "/v1/admin/dream/runs/{run_id:int}/restore",
        restore,
        "Undo a condense run: its memories live again, its summary archived",
        Reply(200, "The restore run", RunOut),
        path_params={"run_id": {"type": "integer"}},
        errors=(
            Reply(404, "No such run in this caller's scope", ErrorResponse),
            Reply(409, "Not a completed condense run", ErrorResponse),
        ),
    ),
)
