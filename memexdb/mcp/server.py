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
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from datetime import datetime
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import Field, ValidationError

from memexdb import __version__, agentic
from memexdb.bearer import bearer_key
from memexdb.client import AsyncMemex
from memexdb.errors import (
    Busy,
    Conflict,
    DatabaseUnavailable,
    Forbidden,
    InvalidArgument,
    MemexError,
    NotFound,
    RateLimited,
    Unauthenticated,
)
from memexdb.mcp.operations import BoundTool, bind, caller_of, tool_annotations
from memexdb.mcp.tenant import ArgumentTenant, Caller, Tenant, TenantResolver
from memexdb.memories import operations as memories
from memexdb.paging import next_key
from memexdb.params import (
    CONTENT_MAX_CHARS,
    DEFAULT_FILE_LIST_LIMIT,
    DEFAULT_SMART_READ_BUDGET,
    AgentId,
    BaseRevision,
    Budget,
    DiffOut,
    FileContent,
    FileEntryOut,
    FileList,
    FileOut,
    FilePath,
    LineNumber,
    PageLimit,
    PathPrefix,
    Query,
    RevisionList,
    RevisionOut,
    SmartReadOut,
    UserId,
    field_errors,
    file_patch,
    not_found_message,
)

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

    # The tools built from the operation table (memexdb.mcp.operations), by name, the
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
    if isinstance(exc, InvalidArgument):
        return f"invalid argument {exc.field}: {exc.message}"
    if isinstance(exc, NotFound):
        return not_found_message(str(exc))
    if isinstance(exc, Conflict):
        return f"conflict: {exc} (read the file again and retry)"
    if isinstance(exc, Unauthenticated):
        return f"not authenticated: {exc}"
    if isinstance(exc, Forbidden):
        return f"permission denied: {exc}"
    if isinstance(exc, RateLimited):
        return f"rate limit exceeded; retry in {max(1, math.ceil(exc.retry_after))} s"
    if isinstance(exc, DatabaseUnavailable):
        return "the memory database is unavailable; retry later"
    if isinstance(exc, Busy):
        return f"busy: {exc}; retry"
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
    """The MCP server with memexdb's tools. `get_memex` returns the open client of
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
    server.operation_tools = {}

    async def tenant_of(agent_id: str, user_id: str, ctx: Context[Any, Any]) -> Tenant:
        return await resolver.resolve(agent_id, user_id, _caller(ctx))

    for operation in (*memories.OPERATIONS, *agentic.OPERATIONS):
        if operation.tool is not None:
            function, bound = bind(operation)
            server.add_tool(
                function,
                name=operation.tool.name,
                description=operation.tool.description,
                annotations=tool_annotations(operation.tool),
            )
            server.operation_tools[operation.tool.name] = bound

    # --- File memory (the MemexAI raw tools) ---------------------------------------

    @tool(ToolAnnotations(title="List files", read_only_hint=True, open_world_hint=False))
    async def memory_list(
        agent_id: AgentId,
        user_id: UserId,
        ctx: Context[Any, Any],
        prefix: PathPrefix = None,
        limit: PageLimit = DEFAULT_FILE_LIST_LIMIT,
        after: Annotated[FilePath | None, Field(description="next_after of the last page.")] = None,
    ) -> FileList:
        """List the tenant's memory files (user/... and agent/...) under `prefix`, in path
        order, with their size in characters, revision and last update. Pass next_after as
        `after` for the next page (null: the last page)."""
        async with _tool_errors():
            tenant = await tenant_of(agent_id, user_id, ctx)
            files, next_after = await client(ctx).list_files(
                tenant.agent_id, tenant.user_id, prefix=prefix, limit=limit, after=after
            )
        return FileList(
            files=[FileEntryOut.model_validate(f) for f in files], next_after=next_after
        )

    @tool(ToolAnnotations(title="Read a file", read_only_hint=True, open_world_hint=False))
    async def memory_read(
        agent_id: AgentId,
        user_id: UserId,
        path: FilePath,
        ctx: Context[Any, Any],
        from_line: LineNumber = None,
        to_line: LineNumber = None,
        as_of: Annotated[
            datetime | None, Field(description="Read the file as it was at this time.")
        ] = None,
    ) -> FileOut:
        """Read a memory file by its virtual path (e.g. user/profile.md): the whole file,
        or lines from_line..to_line; `revision` in the result is what memory_write and
        memory_patch take as base_revision."""
        async with _tool_errors():
            tenant = await tenant_of(agent_id, user_id, ctx)
            found = await client(ctx).read_file(
                tenant.agent_id,
                tenant.user_id,
                path,
                from_line=from_line,
                to_line=to_line,
                as_of=as_of,
            )
        return FileOut.model_validate(found)

    @tool(ToolAnnotations(title="Write a file", destructive_hint=True, open_world_hint=False))
    async def memory_write(
        agent_id: AgentId,
        user_id: UserId,
        path: FilePath,
        content: FileContent,
        ctx: Context[Any, Any],
        base_revision: BaseRevision = None,
    ) -> FileOut:
        """Create or overwrite a memory file (markdown is a good fit): user/... for what
        concerns the user, agent/... for your own notes. Every write keeps a revision. Pass
        the revision you read as base_revision (0 for a new file) to be refused if the file
        changed meanwhile."""
        async with _tool_errors():
            tenant = await tenant_of(agent_id, user_id, ctx)
            written = await client(ctx).write_file(
                tenant.agent_id, tenant.user_id, path, content, base_revision=base_revision
            )
        return FileOut.model_validate(written)

    @tool(ToolAnnotations(title="Patch a file", destructive_hint=True, open_world_hint=False))
    async def memory_patch(
        agent_id: AgentId,
        user_id: UserId,
        path: FilePath,
        ctx: Context[Any, Any],
        heading: Annotated[str | None, Field(max_length=200)] = None,
        append: Annotated[str | None, Field(max_length=CONTENT_MAX_CHARS)] = None,
        old_text: Annotated[str | None, Field(max_length=CONTENT_MAX_CHARS)] = None,
        new_text: Annotated[str | None, Field(max_length=CONTENT_MAX_CHARS)] = None,
        base_revision: BaseRevision = None,
    ) -> FileOut:
        """Change part of a memory file. Either `append` text under a markdown `heading`
        (e.g. "## Preferences"; the heading is added if absent, and the file created if it
        does not exist), or replace `old_text` (which must occur exactly once) with
        `new_text`. Nothing is written if the patch cannot apply."""
        async with _tool_errors():
            tenant = await tenant_of(agent_id, user_id, ctx)
            request = file_patch(
                tenant.agent_id,
                tenant.user_id,
                path,
                heading=heading,
                append=append,
                old_text=old_text,
                new_text=new_text,
                base_revision=base_revision,
            )
            patched = await client(ctx).patch_request(request)
        return FileOut.model_validate(patched)

    @tool(ToolAnnotations(title="Delete a file", destructive_hint=True, open_world_hint=False))
    async def memory_delete(
        agent_id: AgentId,
        user_id: UserId,
        path: FilePath,
        ctx: Context[Any, Any],
        base_revision: BaseRevision = None,
    ) -> FileOut:
        """Delete a memory file. Its revisions are kept: memory_restore brings it back."""
        async with _tool_errors():
            tenant = await tenant_of(agent_id, user_id, ctx)
            deleted = await client(ctx).delete_file(
                tenant.agent_id, tenant.user_id, path, base_revision=base_revision
            )
        return FileOut.model_validate(deleted)

    @tool(ToolAnnotations(title="Smart read", read_only_hint=True, open_world_hint=False))
    async def memory_smart_read(
        agent_id: AgentId,
        user_id: UserId,
        query: Query,
        ctx: Context[Any, Any],
        budget: Budget = DEFAULT_SMART_READ_BUDGET,
    ) -> SmartReadOut:
        """Build one context block of at most `budget` characters from the files and
        memories most relevant to `query`, best first, each under a header with its path
        (### user/profile.md) or id (### memory <id>). Use it before answering."""
        async with _tool_errors():
            tenant = await tenant_of(agent_id, user_id, ctx)
            block = await client(ctx).smart_read(
                tenant.agent_id, tenant.user_id, query, budget=budget
            )
        return SmartReadOut.model_validate(block)

    @tool(ToolAnnotations(title="File revisions", read_only_hint=True, open_world_hint=False))
    async def memory_revisions(
        agent_id: AgentId,
        user_id: UserId,
        path: FilePath,
        ctx: Context[Any, Any],
        limit: PageLimit = DEFAULT_FILE_LIST_LIMIT,
    ) -> RevisionList:
        """List the revisions of a memory file, newest first (who, when, which operation,
        size); memory_diff compares two, memory_restore brings one back."""
        async with _tool_errors():
            tenant = await tenant_of(agent_id, user_id, ctx)
            rows = await client(ctx).list_revisions(
                tenant.agent_id, tenant.user_id, path, limit=limit
            )
        after = next_key(rows, limit, lambda row: row.revision)
        return RevisionList(
            revisions=[RevisionOut.model_validate(r) for r in rows], next_before=after
        )

    @tool(ToolAnnotations(title="Diff revisions", read_only_hint=True, open_world_hint=False))
    async def memory_diff(
        agent_id: AgentId,
        user_id: UserId,
        path: FilePath,
        from_revision: Annotated[int, Field(ge=1, le=2**31 - 1)],
        to_revision: Annotated[int, Field(ge=1, le=2**31 - 1)],
        ctx: Context[Any, Any],
    ) -> DiffOut:
        """A unified diff of a memory file from one revision to another."""
        async with _tool_errors():
            tenant = await tenant_of(agent_id, user_id, ctx)
            diff = await client(ctx).diff_revisions(
                tenant.agent_id, tenant.user_id, path, from_revision, to_revision
            )
        return DiffOut(path=path, from_revision=from_revision, to_revision=to_revision, diff=diff)

    @tool(ToolAnnotations(title="Restore a revision", destructive_hint=True, open_world_hint=False))
    async def memory_restore(
        agent_id: AgentId,
        user_id: UserId,
        path: FilePath,
        revision: Annotated[int, Field(ge=1, le=2**31 - 1)],
        ctx: Context[Any, Any],
        base_revision: BaseRevision = None,
    ) -> FileOut:
        """Make an earlier revision of a memory file current again (a new revision; also
        undoes a delete)."""
        async with _tool_errors():
            tenant = await tenant_of(agent_id, user_id, ctx)
            restored = await client(ctx).restore_revision(
                tenant.agent_id, tenant.user_id, path, revision, base_revision=base_revision
            )
        return FileOut.model_validate(restored)

    return server
