"""The MCP server: typed tools over AsyncMemex, the same calls the REST API makes.

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
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, InputRequiredResult, ToolAnnotations
from memexdb_client.errors import INTERNAL, kind_of, render
from pydantic import ValidationError

from memexdb import __version__
from memexdb.bearer import bearer_key
from memexdb.client import AsyncMemex
from memexdb.error_models import field_errors
from memexdb.errors import MemexError
from memexdb.mcp.operation_tools import BoundTool, bind, caller_of
from memexdb.mcp.tenant import ArgumentTenant, Caller, Tenant, TenantResolver
from memexdb.operation_table import OPERATIONS

log = logging.getLogger("memexdb.mcp")
_Fn = TypeVar("_Fn", bound=Callable[..., Any])

# A tool call never waits longer than this (pool waits and statements are bounded
# already; this also covers a stalled embedder).
TOOL_TIMEOUT_SECONDS = 60.0

INSTRUCTIONS = """\
Long-term memory for this agent. Store facts, events and procedures worth keeping with
store_memory; before answering, recall what is relevant with search_memories (results are
ranked by relevance, recency and importance, best first). Correct a memory that changed
with update_memory rather than storing a contradicting one. Memories belong to a tenant:
always pass the same agent_id (who you are) and user_id (whom the memory is about).
Long-lived documents (a user profile, project notes, a running log) are memory files with
virtual paths (user/profile.md, agent/notes.md): memory_list, memory_read, memory_write,
memory_patch, memory_delete; memory_smart_read builds one bounded context block from the
most relevant files and memories; memory_search returns passages (and, with an LLM, an
answer citing them); memory_memorize keeps what is durable in a conversation turn."""


class MemexMCP(MCPServer[Any]):
    """MCPServer whose argument-validation errors read as one line per bad argument, told
    only to a caller whose credentials are valid."""

    # Check the credentials of a request's headers (None: stdio, the process's own) as
    # every call checks them (memex._enter); raises Unauthenticated. Set by
    # build_mcp_server; the legacy SSE transport uses it too (memexdb.mcp.http).
    authenticate: Callable[[Mapping[str, str] | None], Awaitable[None]] | None = None

    # The tools built from the operation table (memexdb.mcp.operation_tools), by name, the
    # tenant resolver and the client a call acts with (set by build_mcp_server).
    operation_tools: dict[str, BoundTool]
    resolver: TenantResolver
    client_for: Callable[[Mapping[str, str] | None], AsyncMemex]

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        context: Context[Any, Any] | None = None,
    ) -> CallToolResult | InputRequiredResult:
        bound = self.operation_tools.get(name)
        if bound is not None:
            return await self._call_operation(bound, arguments, context)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                await self._authenticated(context)
                raise ToolError(_describe(name, cause)) from cause
            raise

    async def _call_operation(
        self, bound: BoundTool, arguments: dict[str, Any], context: Context[Any, Any] | None
    ) -> CallToolResult | InputRequiredResult:
        try:
            request = bound.request(arguments)  # the one validation of this call
        except (ValidationError, RecursionError, TypeError, ValueError) as exc:
            await self._authenticated(context)
            if isinstance(exc, ValidationError):
                raise ToolError(_describe(bound.tool.name, exc, bound.argument)) from exc
            raise ToolError(f"Error executing tool {bound.tool.name}: invalid arguments") from exc
        headers = None if context is None else context.headers
        try:
            async with _tool_errors():
                return await bound.run(
                    self.client_for(headers), request, self.resolver, caller_of(context)
                )
        except ToolError as exc:  # worded as the SDK words a tool's own errors
            raise ToolError(f"Error executing tool {bound.tool.name}: {exc}") from exc.__cause__

    async def _authenticated(self, context: Context[Any, Any] | None) -> None:
        # The arguments were refused before the tool ran, so before any call checked the
        # caller: check it now (one round trip, only on this error path).
        if self.authenticate is None or context is None:
            return
        try:
            await self.authenticate(context.headers)
        except MemexError as exc:  # not authenticated, or the database cannot say now
            raise ToolError(_message(exc)) from exc


def _describe(tool: str, exc: ValidationError, argument: Callable[[str], str] = str) -> str:
    problems = [f"{argument(e.field)}: {e.message}" for e in field_errors(exc)]
    return f"Error executing tool {tool}: invalid arguments: " + "; ".join(problems)


def _caller(ctx: Context[Any, Any]) -> Caller:
    headers: Mapping[str, str] | None = ctx.headers
    return Caller(dict(headers) if headers is not None else None)


def _message(exc: MemexError) -> str:
    """The tool error of a typed error: its row of the error table's MCP text."""
    kind = kind_of(exc)
    if kind is INTERNAL:
        log.error("unexpected memexdb error: %r", exc)
    return render(kind.mcp, exc)


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
    """The MCP server with memexdb's tools. `get_memex` returns the open client of
    this process (one pool and one embedder, shared with REST); `tenants` decides whose
    memories a call touches (default: the agent_id/user_id arguments)."""
    resolver: TenantResolver = tenants or ArgumentTenant()
    bound_tools = [bind(operation) for operation in OPERATIONS if operation.tool is not None]
    server = MemexMCP(
        "memexdb",
        title="memexdb",
        version=__version__,
        instructions=INSTRUCTIONS,
        tools=[listed for listed, _ in bound_tools],
    )

    def tool(annotations: ToolAnnotations) -> Callable[[_Fn], _Fn]:
        # The docstring is the description the model reads: without code indentation.
        def register(fn: _Fn) -> _Fn:
            server.add_tool(
                fn, description=inspect.cleandoc(fn.__doc__ or ""), annotations=annotations
            )
            return fn

        return register

    def client_for(headers: Mapping[str, str] | None) -> AsyncMemex:
        # Over HTTP the caller's API key (Authorization: Bearer), checked in SQL per call;
        # over stdio the process's own client (MEMEX_API_KEY, if the database needs one).
        memex = get_memex()
        return memex if headers is None else memex.with_key(bearer_key(headers))

    def client(ctx: Context[Any, Any]) -> AsyncMemex:
        return client_for(ctx.headers)

    async def authenticate(headers: Mapping[str, str] | None) -> None:
        await client_for(headers).authenticate()

    server.authenticate = authenticate
    server.resolver = resolver
    server.client_for = client_for
    server.operation_tools = {bound.tool.name: bound for _, bound in bound_tools}

    async def tenant_of(agent_id: str, user_id: str, ctx: Context[Any, Any]) -> Tenant:
        return await resolver.resolve(agent_id, user_id, _caller(ctx))

    return server
