"""The Starlette application: request parsing, one AsyncMemex call, response shaping.

Each operation is declared once in ENDPOINTS (memexdb.rest.endpoint): the routes and the
OpenAPI document (memexdb.rest.docs) are both built from that table, and bodies and
answers are the models of memexdb.params.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from memexdb import __version__, console
from memexdb.client import AsyncMemex
from memexdb.errors import DatabaseUnavailable
from memexdb.params import (
    CountQuery,
    CountResponse,
    ErasedResponse,
    ExportedMemory,
    ExportQuery,
    HealthResponse,
    ListQuery,
    MemoryBatchCreate,
    MemoryBatchResponse,
    MemoryCreate,
    MemoryOut,
    MemoryPage,
    MemoryPatch,
    MemorySearchRequest,
    SearchResponse,
    SearchResult,
    TenantQuery,
)
from memexdb.rest import admin, agentic, docs, dream, embeddings, files, ops
from memexdb.rest.endpoint import Endpoint, Reply
from memexdb.rest.errors import HANDLERS, CatchAll
from memexdb.rest.parsing import body_of, json_of, memex_of, query_of

log = logging.getLogger("memexdb.rest")


async def create_memory(request: Request) -> Response:
    body = await body_of(request, MemoryCreate)
    memory = await memex_of(request).store(**body.model_dump())
    return json_of(MemoryOut.model_validate(memory), 201)


async def create_memories_batch(request: Request) -> Response:
    body = await body_of(request, MemoryBatchCreate)
    stored = await memex_of(request).store_many(body.memories)
    memories = [MemoryOut.model_validate(m) for m in stored]
    return json_of(MemoryBatchResponse(memories=memories, total=len(memories)), 201)


async def search_memories(request: Request) -> Response:
    body = await body_of(request, MemorySearchRequest)
    hits = await memex_of(request).search(
        body.agent_id,
        body.user_id,
        body.query,
        top_k=body.top_k,
        alpha=body.alpha,
        half_life_days=body.half_life_days,
        memory_types=body.types(),
        mode=body.mode,
        context_weight=body.context_weight,
        metadata=body.metadata,
        include_archived=body.include_archived,
    )
    results = [SearchResult.model_validate(h) for h in hits]
    return json_of(
        SearchResponse(
            agent_id=body.agent_id,
            user_id=body.user_id,
            query=body.query,
            total=len(results),
            results=results,
        )
    )


async def delete_memory(request: Request) -> Response:
    tenant = query_of(request, TenantQuery)
    await memex_of(request).forget(
        tenant.agent_id, tenant.user_id, request.path_params["memory_id"]
    )
    return Response(status_code=204)


async def count_memories(request: Request) -> Response:
    query = query_of(request, CountQuery)
    count = await memex_of(request).count(
        query.agent_id, query.user_id, query.memory_type, metadata=query.metadata
    )
    return json_of(CountResponse(**query.model_dump(exclude={"metadata"}), count=count))


async def list_memories(request: Request) -> Response:
    query = query_of(request, ListQuery)
    page = await memex_of(request).list_memories(**query.model_dump())
    memories = [MemoryOut.model_validate(m) for m in page.memories]
    return json_of(MemoryPage(memories=memories, next_cursor=page.next_cursor))


async def get_memory(request: Request) -> Response:
    tenant = query_of(request, TenantQuery)
    memory = await memex_of(request).get(
        tenant.agent_id, tenant.user_id, request.path_params["memory_id"]
    )
    return json_of(MemoryOut.model_validate(memory))


async def update_memory(request: Request) -> Response:
    patch = await body_of(request, MemoryPatch)
    memory = await memex_of(request).update_patch(request.path_params["memory_id"], patch)
    return json_of(MemoryOut.model_validate(memory))


async def erase_user(request: Request) -> Response:
    tenant = query_of(request, TenantQuery)
    deleted = await memex_of(request).erase_user(tenant.agent_id, tenant.user_id)
    return json_of(ErasedResponse(**tenant.model_dump(), deleted=deleted))


async def export_memories(request: Request) -> Response:
    query = query_of(request, ExportQuery)
    records = aiter(memex_of(request).export(**query.model_dump()))
    # The first page is read before the answer starts, so that its errors are JSON answers.
    first = await anext(records, None)

    async def lines() -> AsyncIterator[str]:
        if first is None:
            return
        yield json.dumps(first, ensure_ascii=False) + "\n"
        async for record in records:
            yield json.dumps(record, ensure_ascii=False) + "\n"

    return StreamingResponse(lines(), media_type="application/x-ndjson")


async def health(request: Request) -> Response:
    try:
        async with asyncio.timeout(2.0):
            await request.app.state.memex.ping()
    except (DatabaseUnavailable, TimeoutError):
        return json_of(
            HealthResponse(status="unavailable", db="unreachable", version=__version__), 503
        )
    return json_of(HealthResponse(status="ok", db="ok", version=__version__))


_MEMORY_ID = {"memory_id": {"type": "string", "format": "uuid"}}
_NOT_FOUND = Reply(404, "No such live memory for this tenant (or an id that is not a UUID)")

ENDPOINTS = (
    Endpoint(
        "POST",
        "/v1/memories",
        create_memory,
        "Store a memory",
        Reply(201, "Stored", MemoryOut),
        body=MemoryCreate,
    ),
    Endpoint(
        "POST",
        "/v1/memories/batch",
        create_memories_batch,
        "Store up to 1000 memories in one statement (imports)",
        Reply(201, "Stored, in input order", MemoryBatchResponse),
        body=MemoryBatchCreate,
    ),
    Endpoint(
        "POST",
        "/v1/memories/search",
        search_memories,
        "Search a tenant's memories (relevance + recency + importance)",
        Reply(200, "Ranked results", SearchResponse),
        body=MemorySearchRequest,
    ),
    Endpoint(
        "GET",
        "/v1/memories/count",
        count_memories,
        "Count a tenant's live memories",
        Reply(200, "Count", CountResponse),
        query=CountQuery,
    ),
    Endpoint(
        "DELETE",
        "/v1/memories/{memory_id:uuid}",
        delete_memory,
        "Delete one memory of the tenant",
        Reply(204, "Deleted"),
        query=TenantQuery,
        path_params=_MEMORY_ID,
        errors=(Reply(404, "No such memory for this tenant (or an id that is not a UUID)"),),
    ),
    Endpoint(
        "GET",
        "/v1/memories",
        list_memories,
        "List a tenant's live memories, newest first, a page at a time",
        Reply(200, "A page of memories and the cursor of the next one", MemoryPage),
        query=ListQuery,
    ),
    Endpoint(
        "GET",
        "/v1/memories/{memory_id:uuid}",
        get_memory,
        "Get one memory of the tenant",
        Reply(200, "The memory", MemoryOut),
        query=TenantQuery,
        path_params=_MEMORY_ID,
        errors=(_NOT_FOUND,),
    ),
    Endpoint(
        "PATCH",
        "/v1/memories/{memory_id:uuid}",
        update_memory,
        "Change fields of one memory of the tenant (a new content is embedded again)",
        Reply(200, "The memory as changed", MemoryOut),
        body=MemoryPatch,
        path_params=_MEMORY_ID,
        errors=(_NOT_FOUND,),
    ),
    Endpoint(
        "DELETE",
        "/v1/memories",
        erase_user,
        "Erase a user: delete every row of the tenant in every table",
        Reply(200, "Rows deleted per table", ErasedResponse),
        query=TenantQuery,
    ),
    Endpoint(
        "GET",
        "/v1/export",
        export_memories,
        "Export an agent's (or one user's) memories as JSON Lines, oldest first per user",
        Reply(
            200,
            "One memory per line (`memexdb import` reads it back)",
            ExportedMemory,
            media_type="application/x-ndjson",
        ),
        query=ExportQuery,
    ),
    Endpoint(
        "GET",
        "/health",
        health,
        "200 when the database answers, 503 otherwise",
        Reply(200, "Healthy", HealthResponse),
        errors=(Reply(503, "Database unreachable", HealthResponse),),
        open=True,
    ),
    *ops.ENDPOINTS,
    *files.ENDPOINTS,
    *agentic.ENDPOINTS,
    *embeddings.ENDPOINTS,
    *admin.ENDPOINTS,
    *dream.ENDPOINTS,
)


def _route(path: str, endpoints: list[Endpoint]) -> Route:
    # One route per path, so that a 405 names every method of the path in its Allow header.
    handlers = {e.method: e.handler for e in endpoints}
    if "GET" in handlers:
        handlers.setdefault("HEAD", handlers["GET"])

    async def dispatch(request: Request) -> Response:
        return await handlers[request.method](request)

    return Route(path, dispatch, methods=list(handlers))


def routes() -> list[BaseRoute]:
    by_path: dict[str, list[Endpoint]] = {}
    for e in ENDPOINTS:
        by_path.setdefault(e.path, []).append(e)
    return [
        *(_route(path, endpoints) for path, endpoints in by_path.items()),
        *docs.routes(ENDPOINTS),
        # the admin console (HTML pages, not in the OpenAPI document): memexdb.console
        *console.routes(),
    ]


def create_app(
    connect: Callable[[], contextlib.AbstractAsyncContextManager[AsyncMemex]],
    *,
    metrics_token: str | None = None,
) -> Starlette:
    """The REST app. `connect()` opens the AsyncMemex the app uses for its lifespan
    (memexdb.service passes the process's runtime, which also runs the scheduled jobs).
    `metrics_token`: a bearer token that may read GET /metrics besides admin keys."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        app.state.scrapes = ops.ScrapeAccess(metrics_token)
        async with connect() as memex:
            app.state.memex = memex
            yield

    return Starlette(
        routes=routes(),
        middleware=[Middleware(CatchAll)],
        exception_handlers=dict(HANDLERS),
        lifespan=lifespan,
    )
