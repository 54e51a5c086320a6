"""POST /v1/admin/dream/run: run consolidation now, a tick over every tenant or one
tenant's run (memexdb.consolidation.run_now: the consolidation loop, not one statement).
The other consolidation endpoints are operations (memexdb.dreaming.operations)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from memexdb import consolidation
from memexdb.params import DreamRunRequest, RunList, RunOut
from memexdb.rest.endpoint import Endpoint, Reply
from memexdb.rest.parsing import body_of, json_of, memex_of


async def run_now(request: Request) -> Response:
    body = await body_of(request, DreamRunRequest)
    memex = memex_of(request)
    tenant = None
    if body.agent_id is not None and body.user_id is not None:
        tenant = (body.agent_id, body.user_id)
    done = await consolidation.run_now(memex, tenant, dry_run=body.dry_run, force=body.force)
    return json_of(RunList(runs=[RunOut.model_validate(r) for r in done], next_before=None))


ENDPOINTS = (
    Endpoint(
        "POST",
        "/v1/admin/dream/run",
        run_now,
        "Run consolidation now: a tick over every tenant, or one tenant (dry_run: the plan)",
        Reply(200, "The runs (plans when dry_run)", RunList),
        body=DreamRunRequest,
    ),
)
