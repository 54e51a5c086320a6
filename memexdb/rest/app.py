"""The Starlette application: request parsing, one AsyncMemex call, response shaping."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import TypeVar
from uuid import UUID

from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from memexdb import __version__
from memexdb.client import AsyncMemex
from memexdb.errors import DatabaseUnavailable
from memexdb.rest import docs
from memexdb.rest.errors import HANDLERS, BadRequestBody
from memexdb.rest.schemas import (
    CountResponse,
    HealthResponse,
    MemoryBatchCreate,
    MemoryBatchResponse,
    MemoryCreate,
    MemoryResponse,
    MemorySearchRequest,
    MemorySearchResponse,
    SearchResult,
)
from memexdb.types import Memory, MemoryType, NewMemory, SearchHit

log = logging.getLogger("memexdb.rest")
Body = TypeVar("Body", bound=BaseModel)
MAX_BODY_BYTES = 16 * 1024 * 1024


class TenantQuery(BaseModel):
    agent_id: str
    user_id: str
    memory_type: MemoryType | None = None


def _memex(request: Request) -> AsyncMemex:
    memex: AsyncMemex = request.app.state.memex
    return memex


async def _parse(request: Request, model: type[Body]) -> Body:
    if int(request.headers.get("content-length") or 0) > MAX_BODY_BYTES:
        raise HTTPException(413, f"request body larger than {MAX_BODY_BYTES} bytes")
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        raise HTTPException(413, f"request body larger than {MAX_BODY_BYTES} bytes")
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequestBody("request body is not valid JSON") from exc
    if not isinstance(data, dict):
        raise BadRequestBody("request body must be a JSON object")
    return model.model_validate(data)


def _tenant_query(request: Request) -> TenantQuery:
    # Query parameters are validated like bodies: the same 422 naming each bad field.
    params = dict(request.query_params)
    for name in ("agent_id", "user_id"):
        if name in params and not 1 <= len(params[name]) <= 128:
            raise ValidationError.from_exception_data(
                "TenantQuery",
                [
                    {
                        "type": "string_too_long" if params[name] else "string_too_short",
                        "loc": (name,),
                        "input": params[name],
                        "ctx": {"max_length": 128, "min_length": 1},
                    }
                ],
            )
    return TenantQuery.model_validate(params)


def _json(model: BaseModel, status: int = 200) -> JSONResponse:
    return JSONResponse(model.model_dump(mode="json"), status_code=status)


def _memory_response(memory: Memory) -> MemoryResponse:
    return MemoryResponse(
        id=memory.id,
        agent_id=memory.agent_id,
        user_id=memory.user_id,
        content=memory.content,
        importance=memory.importance,
        memory_type=memory.memory_type,
        metadata=memory.metadata,
        created_at=memory.created_at,
        expires_at=memory.expires_at,
    )


def _search_result(hit: SearchHit) -> SearchResult:
    return SearchResult(
        id=hit.id,
        agent_id=hit.agent_id,
        user_id=hit.user_id,
        content=hit.content,
        importance=hit.importance,
        memory_type=hit.memory_type,
        metadata=hit.metadata,
        created_at=hit.created_at,
        expires_at=hit.expires_at,
        score=hit.score,
        similarity=hit.similarity,
        text_rank=hit.text_rank,
        relevance=hit.relevance,
        recency=hit.recency,
    )


def _new_memory(body: MemoryCreate) -> NewMemory:
    return NewMemory(
        agent_id=body.agent_id,
        user_id=body.user_id,
        content=body.content,
        memory_type=body.memory_type,
        importance=body.importance,
        metadata=body.metadata,
        expires_at=body.expires_at,
        created_at=body.created_at,
    )


async def create_memory(request: Request) -> Response:
    body = await _parse(request, MemoryCreate)
    memory = await _memex(request).store(
        body.agent_id,
        body.user_id,
        body.content,
        memory_type=body.memory_type,
        importance=body.importance,
        metadata=body.metadata,
        expires_at=body.expires_at,
        created_at=body.created_at,
    )
    return _json(_memory_response(memory), 201)


async def create_memories_batch(request: Request) -> Response:
    body = await _parse(request, MemoryBatchCreate)
    stored = await _memex(request).store_many([_new_memory(m) for m in body.memories])
    memories = [_memory_response(m) for m in stored]
    return _json(MemoryBatchResponse(memories=memories, total=len(memories)), 201)


async def search_memories(request: Request) -> Response:
    body = await _parse(request, MemorySearchRequest)
    types = body.memory_types or ([body.memory_type] if body.memory_type else None)
    hits = await _memex(request).search(
        body.agent_id,
        body.user_id,
        body.query,
        top_k=body.top_k,
        alpha=body.alpha,
        half_life_days=body.half_life_days,
        memory_types=types,
        mode=body.mode,
        context_weight=body.context_weight,
    )
    results = [_search_result(h) for h in hits]
    return _json(MemorySearchResponse(results=results, query=body.query, total=len(results)))


async def delete_memory(request: Request) -> Response:
    tenant = _tenant_query(request)
    try:
        memory_id = UUID(request.path_params["memory_id"])
    except ValueError as exc:
        raise ValidationError.from_exception_data(
            "path",
            [
                {
                    "type": "uuid_parsing",
                    "loc": ("id",),
                    "input": request.path_params["memory_id"],
                    "ctx": {"error": "invalid"},
                }
            ],
        ) from exc
    await _memex(request).forget(tenant.agent_id, tenant.user_id, memory_id)
    return Response(status_code=204)


async def count_memories(request: Request) -> Response:
    tenant = _tenant_query(request)
    count = await _memex(request).count(tenant.agent_id, tenant.user_id, tenant.memory_type)
    return _json(
        CountResponse(
            agent_id=tenant.agent_id,
            user_id=tenant.user_id,
            memory_type=tenant.memory_type,
            count=count,
        )
    )


async def health(request: Request) -> Response:
    try:
        await asyncio.wait_for(_memex(request).ping(), timeout=2.0)
    except (DatabaseUnavailable, TimeoutError):
        return _json(
            HealthResponse(status="unavailable", db="unreachable", version=__version__), 503
        )
    return _json(HealthResponse(status="ok", db="ok", version=__version__))


def routes() -> list[BaseRoute]:
    return [
        Route("/v1/memories", create_memory, methods=["POST"]),
        Route("/v1/memories/batch", create_memories_batch, methods=["POST"]),
        Route("/v1/memories/search", search_memories, methods=["POST"]),
        Route("/v1/memories/count", count_memories, methods=["GET"]),
        Route("/v1/memories/{memory_id}", delete_memory, methods=["DELETE"]),
        Route("/health", health, methods=["GET"]),
        *docs.routes(),
    ]


def create_app(
    connect: Callable[[], contextlib.AbstractAsyncContextManager[AsyncMemex]],
) -> Starlette:
    """The REST app. `connect()` opens the AsyncMemex the app uses for its lifespan
    (memexdb.service passes the process's runtime, which also runs the scheduled jobs)."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with connect() as memex:
            app.state.memex = memex
            yield

    return Starlette(
        routes=routes(),
        exception_handlers=dict(HANDLERS),
        lifespan=lifespan,
    )
