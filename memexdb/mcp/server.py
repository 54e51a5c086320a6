"""The MCP server: four typed tools over AsyncMemex, the same calls the REST API makes.

Each tool validates its arguments (pydantic, from the signature), resolves the tenant,
makes one AsyncMemex call and shapes the result. Failures come back as tool errors
(`isError: true`) with a message meant for the model to read; nothing here ranks,
filters or limits (that is memex.* in SQL).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import math
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import ValidationError

from memexdb import __version__
from memexdb.client import AsyncMemex
from memexdb.errors import DatabaseUnavailable, InvalidArgument, MemexError, NotFound, RateLimited
from memexdb.mcp.tenant import ArgumentTenant, Caller, Tenant, TenantResolver
from memexdb.params import (
    DEFAULT_ALPHA,
    DEFAULT_HALF_LIFE_DAYS,
    DEFAULT_IMPORTANCE,
    DEFAULT_MEMORY_TYPE,
    DEFAULT_MODE,
    DEFAULT_TOP_K,
    AgentId,
    Alpha,
    Content,
    ContextWeight,
    CountResponse,
    Deleted,
    HalfLifeDays,
    Importance,
    Kind,
    MemoryId,
    MemoryOut,
    MemoryTypeFilter,
    MemoryTypes,
    Metadata,
    Mode,
    Query,
    SearchResponse,
    SearchResult,
    TopK,
    UserId,
    field_errors,
    type_filter,
)

log = logging.getLogger("memexdb.mcp")
_Fn = TypeVar("_Fn", bound=Callable[..., Any])

# A tool call never waits longer than this (pool waits and statements are bounded
# already; this also covers a stalled embedder).
TOOL_TIMEOUT_SECONDS = 60.0

INSTRUCTIONS = """\
Long-term memory for this agent. Store facts, events and procedures worth keeping with
store_memory; before answering, recall what is relevant with search_memories (results are
ranked by relevance, recency and importance, best first). Memories belong to a tenant:
always pass the same agent_id (who you are) and user_id (whom the memory is about)."""


class MemexMCP(MCPServer[Any]):
    """MCPServer whose argument-validation errors read as one line per bad argument."""

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        context: Context[Any, Any] | None = None,
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(_describe(name, cause)) from cause
            raise


def _describe(tool: str, exc: ValidationError) -> str:
    problems = [f"{e.field}: {e.message}" for e in field_errors(exc)]
    return f"Error executing tool {tool}: invalid arguments: " + "; ".join(problems)


def _caller(ctx: Context[Any, Any]) -> Caller:
    headers: Mapping[str, str] | None = ctx.headers
    return Caller(dict(headers) if headers is not None else None)


def _message(exc: MemexError) -> str:
    if isinstance(exc, InvalidArgument):
        return f"invalid argument {exc.field}: {exc.message}"
    if isinstance(exc, NotFound):
        return "memory not found for this agent_id and user_id"
    if isinstance(exc, RateLimited):
        return f"rate limit exceeded; retry in {max(1, math.ceil(exc.retry_after))} s"
    if isinstance(exc, DatabaseUnavailable):
        return "the memory database is unavailable; retry later"
    log.error("unexpected memexdb error: %r", exc)
    return "internal error"


@contextlib.asynccontextmanager
async def _tool_errors() -> AsyncIterator[None]:
    """memexdb's typed errors become tool errors (isError: true) with a clear message."""
    try:
        async with asyncio.timeout(TOOL_TIMEOUT_SECONDS):
            yield
    except MemexError as exc:
        raise ToolError(_message(exc)) from exc
    except PermissionError as exc:  # a TenantResolver refused the caller
        raise ToolError(str(exc) or "permission denied") from exc
    except TimeoutError as exc:
        raise ToolError(f"timed out after {TOOL_TIMEOUT_SECONDS:.0f} s; retry later") from exc


def build_mcp_server(
    get_memex: Callable[[], AsyncMemex], tenants: TenantResolver | None = None
) -> MemexMCP:
    """The MCP server with memexdb's four tools. `get_memex` returns the open client of
    this process (one pool and one embedder, shared with REST); `tenants` decides whose
    memories a call touches (default: the agent_id/user_id arguments)."""
    resolver: TenantResolver = tenants or ArgumentTenant()
    server = MemexMCP(
        "memexdb",
        title="memexdb",
        version=__version__,
        instructions=INSTRUCTIONS,
    )

    def tool(annotations: ToolAnnotations) -> Callable[[_Fn], _Fn]:
        # The docstring is the description the model reads: without code indentation.
        def register(fn: _Fn) -> _Fn:
            server.add_tool(
                fn, description=inspect.cleandoc(fn.__doc__ or ""), annotations=annotations
            )
            return fn

        return register

    async def tenant_of(agent_id: str, user_id: str, ctx: Context[Any, Any]) -> Tenant:
        return await resolver.resolve(agent_id, user_id, _caller(ctx))

    @tool(ToolAnnotations(title="Store a memory", destructive_hint=False, open_world_hint=False))
    async def store_memory(
        agent_id: AgentId,
        user_id: UserId,
        content: Content,
        ctx: Context[Any, Any],
        memory_type: Kind = DEFAULT_MEMORY_TYPE,
        importance: Importance = DEFAULT_IMPORTANCE,
        metadata: Metadata = None,
    ) -> MemoryOut:
        """Remember something for later: store one memory (a fact, an event or a procedure)
        for the tenant (agent_id, user_id). Returns the stored memory with its id."""
        async with _tool_errors():
            tenant = await tenant_of(agent_id, user_id, ctx)
            memory = await get_memex().store(
                tenant.agent_id,
                tenant.user_id,
                content,
                memory_type=memory_type,
                importance=importance,
                metadata=metadata,
            )
        return MemoryOut.model_validate(memory)

    @tool(ToolAnnotations(title="Search memories", read_only_hint=True, open_world_hint=False))
    async def search_memories(
        agent_id: AgentId,
        user_id: UserId,
        query: Query,
        ctx: Context[Any, Any],
        top_k: TopK = DEFAULT_TOP_K,
        alpha: Alpha = DEFAULT_ALPHA,
        memory_type: MemoryTypeFilter = None,
        half_life_days: HalfLifeDays = DEFAULT_HALF_LIFE_DAYS,
        memory_types: MemoryTypes = None,
        mode: Mode = DEFAULT_MODE,
        context_weight: ContextWeight = None,
    ) -> SearchResponse:
        """Recall the tenant's memories most relevant to `query`, best first, from any point
        in the past; of two equally relevant memories the newer comes first. Each result
        carries its score and the parts of it: score = relevance * (1 + 0.25 * recency) *
        importance, or (alpha * relevance + (1 - alpha) * recency) * importance when alpha
        is given."""
        async with _tool_errors():
            tenant = await tenant_of(agent_id, user_id, ctx)
            hits = await get_memex().search(
                tenant.agent_id,
                tenant.user_id,
                query,
                top_k=top_k,
                alpha=alpha,
                half_life_days=half_life_days,
                memory_types=type_filter(memory_type, memory_types),
                mode=mode,
                context_weight=context_weight,
            )
        results = [SearchResult.model_validate(h) for h in hits]
        return SearchResponse(
            agent_id=tenant.agent_id,
            user_id=tenant.user_id,
            query=query,
            total=len(results),
            results=results,
        )

    @tool(ToolAnnotations(title="Delete a memory", destructive_hint=True, open_world_hint=False))
    async def delete_memory(
        agent_id: AgentId,
        user_id: UserId,
        id: MemoryId,
        ctx: Context[Any, Any],
    ) -> Deleted:
        """Forget one memory of the tenant by its id. Fails if the id is not one of this
        tenant's memories."""
        async with _tool_errors():
            tenant = await tenant_of(agent_id, user_id, ctx)
            memory = await get_memex().forget(tenant.agent_id, tenant.user_id, id)
        return Deleted(deleted=MemoryOut.model_validate(memory))

    @tool(ToolAnnotations(title="Count memories", read_only_hint=True, open_world_hint=False))
    async def count_memories(
        agent_id: AgentId,
        user_id: UserId,
        ctx: Context[Any, Any],
        memory_type: MemoryTypeFilter = None,
    ) -> CountResponse:
        """Count the tenant's live memories (optionally of one type)."""
        async with _tool_errors():
            tenant = await tenant_of(agent_id, user_id, ctx)
            count = await get_memex().count(tenant.agent_id, tenant.user_id, memory_type)
        return CountResponse(
            agent_id=tenant.agent_id, user_id=tenant.user_id, memory_type=memory_type, count=count
        )

    return server
