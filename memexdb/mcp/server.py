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
from typing import Annotated, Any, TypeVar
from uuid import UUID

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import Field, ValidationError

from memexdb import __version__
from memexdb.client import AsyncMemex
from memexdb.errors import DatabaseUnavailable, InvalidArgument, MemexError, NotFound, RateLimited
from memexdb.mcp.models import Count, Deleted, Hit, MemoryTypeName, SearchResults, StoredMemory
from memexdb.mcp.tenant import ArgumentTenant, Caller, Tenant, TenantResolver
from memexdb.types import MemoryType

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

AgentId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=128,
        description="Your agent's id; memories are private to (agent_id, user_id).",
    ),
]
UserId = Annotated[
    str,
    Field(
        min_length=1, max_length=128, description="The user the memories are about or belong to."
    ),
]
KindArg = Annotated[
    MemoryTypeName,
    Field(
        description="semantic: facts and preferences; episodic: events and conversations; "
        "procedural: how to do things."
    ),
]


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
    problems = [
        f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
        for err in exc.errors(include_url=False)
    ]
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
        content: Annotated[
            str,
            Field(
                min_length=1,
                max_length=32768,
                description="The memory, as a self-contained sentence or short passage.",
            ),
        ],
        ctx: Context[Any, Any],
        memory_type: KindArg = "episodic",
        importance: Annotated[
            float,
            Field(
                ge=0.0,
                le=2.0,
                allow_inf_nan=False,
                description="0 to 2; scales the memory's score (1 = normal, 2 = twice as strong).",
            ),
        ] = 1.0,
        metadata: Annotated[
            dict[str, Any] | None, Field(description="Optional JSON object kept with the memory.")
        ] = None,
    ) -> StoredMemory:
        """Remember something for later: store one memory (a fact, an event or a procedure)
        for the tenant (agent_id, user_id). Returns the stored memory with its id."""
        async with _tool_errors():
            tenant = await tenant_of(agent_id, user_id, ctx)
            memory = await get_memex().store(
                tenant.agent_id,
                tenant.user_id,
                content,
                memory_type=MemoryType(memory_type),
                importance=importance,
                metadata=metadata,
            )
        return StoredMemory.of(memory)

    @tool(ToolAnnotations(title="Search memories", read_only_hint=True, open_world_hint=False))
    async def search_memories(
        agent_id: AgentId,
        user_id: UserId,
        query: Annotated[
            str,
            Field(min_length=1, max_length=8000, description="What to recall, in plain words."),
        ],
        ctx: Context[Any, Any],
        top_k: Annotated[
            int, Field(ge=1, le=100, description="How many memories to return (1 to 100).")
        ] = 10,
        alpha: Annotated[
            float,
            Field(
                ge=0.0,
                le=1.0,
                allow_inf_nan=False,
                description="Weight of relevance against recency: 1 = relevance only, "
                "0 = newest first.",
            ),
        ] = 0.7,
        memory_type: Annotated[
            MemoryTypeName | None, Field(description="Only memories of this type.")
        ] = None,
        half_life_days: Annotated[
            float,
            Field(
                gt=0.0,
                le=36500.0,
                allow_inf_nan=False,
                description="Age in days at which recency has halved.",
            ),
        ] = 30.0,
    ) -> SearchResults:
        """Recall the tenant's memories most relevant to `query`, best first. Each result
        carries its score and the parts of it: score = (alpha * relevance + (1 - alpha) *
        recency) * importance."""
        async with _tool_errors():
            tenant = await tenant_of(agent_id, user_id, ctx)
            hits = await get_memex().search(
                tenant.agent_id,
                tenant.user_id,
                query,
                top_k=top_k,
                alpha=alpha,
                half_life_days=half_life_days,
                memory_types=[MemoryType(memory_type)] if memory_type else None,
            )
        results = [Hit.of(h) for h in hits]
        return SearchResults(
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
        id: Annotated[UUID, Field(description="The id of the memory, as returned by the tools.")],
        ctx: Context[Any, Any],
    ) -> Deleted:
        """Forget one memory of the tenant by its id. Fails if the id is not one of this
        tenant's memories."""
        async with _tool_errors():
            tenant = await tenant_of(agent_id, user_id, ctx)
            memory = await get_memex().forget(tenant.agent_id, tenant.user_id, id)
        return Deleted(deleted=StoredMemory.of(memory))

    @tool(ToolAnnotations(title="Count memories", read_only_hint=True, open_world_hint=False))
    async def count_memories(
        agent_id: AgentId,
        user_id: UserId,
        ctx: Context[Any, Any],
        memory_type: Annotated[
            MemoryTypeName | None, Field(description="Count only memories of this type.")
        ] = None,
    ) -> Count:
        """Count the tenant's live memories (optionally of one type)."""
        async with _tool_errors():
            tenant = await tenant_of(agent_id, user_id, ctx)
            count = await get_memex().count(
                tenant.agent_id, tenant.user_id, MemoryType(memory_type) if memory_type else None
            )
        return Count(
            agent_id=tenant.agent_id, user_id=tenant.user_id, memory_type=memory_type, count=count
        )

    return server
