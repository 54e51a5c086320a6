"""AsyncMemexClient and MemexClient: memexdb's REST API with the methods, arguments and
result types of the in-process memexdb.AsyncMemex (see memexdb_client.api).

The HTTP mapping of each method (method, path, where the arguments go, paging) is
memexdb_client._routes, generated from the server's operation table. Partially generated
too: the parameter list of each method marked `# signature: generated` is written by
tools/generate_signatures.py from the server's request models (the OpenAPI document's
source); edit the model and regenerate, not the signature.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Iterable,
    Mapping,
    Sequence,
)
from datetime import datetime
from typing import Any, ParamSpec, TypeVar
from urllib.parse import quote
from uuid import UUID

import httpx
from pydantic import BaseModel, TypeAdapter

from memexdb_client._routes import ROUTES
from memexdb_client._sync import LoopThread, blocking, iterating
from memexdb_client._transport import AsyncTransport, Retries, body_json, query_params
from memexdb_client.errors import InvalidArgument
from memexdb_client.types import (
    Access,
    AccessEvent,
    ApiKey,
    AuditEvent,
    ConsolidationRun,
    CreatedKey,
    DreamUser,
    Embeddings,
    File,
    FileEntry,
    FileRevision,
    ImportResult,
    Memory,
    MemoryPage,
    MemoryRevision,
    MemoryType,
    RevokedKey,
    RunNowResult,
    SearchHit,
    SearchMode,
    SmartRead,
)

_P = ParamSpec("_P")
_R = TypeVar("_R")
_T = TypeVar("_T")

# The server's defaults of the hand-written methods' arguments (the generated ones take
# theirs from the request models: tools/generate_signatures.py).
DEFAULT_EXPORT_BATCH = 500
DEFAULT_PASSAGES_TOP_K = 8
DEFAULT_PASSAGE_CHARS = 800
DEFAULT_RUNS_LIMIT = 100

# Writes that may be sent again after a connection failed once the request was out:
# applying them twice gives the same state (store: its client-generated id; update and
# store_many: its ids too; set_* set values; PUT and DELETE by their HTTP meaning).
_RESENDABLE = frozenset(
    {
        "store",
        "store_many",
        "put_memories",
        "refresh_memories",
        "update",
        "set_dream_config",
        "set_dream_paused",
    }
)


_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}


def _adapter(kind: Any) -> TypeAdapter[Any]:
    adapter = _ADAPTERS.get(kind)
    if adapter is None:
        adapter = _ADAPTERS[kind] = TypeAdapter(kind)
    return adapter


def _as(kind: type[_T], value: Any) -> _T:
    """A JSON value as a result type (a dataclass of memexdb_client.types, or a list)."""
    result: _T = _adapter(kind).validate_python(value)
    return result


def _given(arguments: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in arguments.items() if name != "self"}


# Arguments that name one thing: an empty or malformed one is refused before anything is
# sent (an empty id in a path would name another route; memory ids are UUIDs).
_UUIDS = ("memory_id",)
_NAMES = ("agent_id", "user_id", "path", "key", "confirm")  # (in the order they are named)


def _refuse_bad_ids(values: dict[str, Any]) -> None:
    """InvalidArgument for an id argument that is empty or (memory ids) not a UUID; a
    memory id in its canonical form."""
    for name in (n for n in _UUIDS if n in values):
        value = values[name]
        try:
            values[name] = value if isinstance(value, UUID) else UUID(str(value))
        except ValueError:
            raise InvalidArgument(name, f"must be a UUID, not {value!r}") from None
    for name in (n for n in _NAMES if n in values):
        value = values[name]
        if value == "":
            raise InvalidArgument(name, "must not be empty")


class AsyncMemexClient:
    """The memexdb service over HTTP, with the methods of memexdb.AsyncMemex.

    `base_url`: the service (e.g. http://127.0.0.1:8000); `api_key`: sent as a bearer
    token; `timeout`: seconds (or an httpx.Timeout) per request; `retries`: tries in all
    on 429 and 503 (an int) or a Retries. One keep-alive connection pool per client:
    close it (`await client.aclose()` or `async with`).

    Read-your-writes: the client keeps the latest session token the service answered
    (Memex-Write-LSN, with read replicas) and sends it on every request (Memex-Min-LSN),
    so its reads see its writes whichever process or host answers (docs/rest.md)."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout = 30.0,
        retries: int | Retries = 4,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        policy = retries if isinstance(retries, Retries) else Retries(attempts=max(1, retries))
        self._http = AsyncTransport(base_url, api_key, timeout, policy, transport)

    async def __aenter__(self) -> AsyncMemexClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    @property
    def session_token(self) -> str | None:
        """The latest Memex-Write-LSN the service answered this client (None: none yet)."""
        return self._http.session_token

    # --- the one request path ---

    async def _request(self, name: str, values: Mapping[str, Any]) -> Any:
        """Send operation `name` with its request fields; its JSON answer (None: none)."""
        route = ROUTES[name]
        values = dict(values)
        _refuse_bad_ids(values)
        path = route.path
        for param in route.path_params:
            path = path.replace("{" + param + "}", quote(str(values.pop(param)), safe=""))
        params = json_body = None
        if route.source == "query":
            params = query_params(values)
        elif route.source == "body":
            json_body = body_json(values)
        resend = route.method in ("GET", "PUT", "DELETE") or route.access == "read"
        response = await self._http.send(
            route.method,
            path,
            params=params,
            json_body=json_body,
            resend=resend or name in _RESENDABLE,
        )
        if route.no_body or not response.content:
            return None
        return response.json()

    async def _pages(
        self, name: str, key: str, values: dict[str, Any]
    ) -> AsyncIterator[dict[str, Any]]:
        """Every item of a paged listing (the `key` list of each page), page after page."""
        paging = ROUTES[name].paging
        assert paging is not None
        cursor_field, next_field = paging
        while True:
            page = await self._request(name, values)
            for item in page[key]:
                yield item
            if page.get(next_field) is None:
                return
            values = {**values, cursor_field: page[next_field]}

    # --- memories ---

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def store(
        self,
        agent_id: str,
        user_id: str,
        content: str,
        *,
        memory_type: MemoryType | str = MemoryType.EPISODIC,
        importance: float = 1.0,
        metadata: dict[str, Any] | None = None,
        expires_at: datetime | None = None,
        created_at: datetime | None = None,
        id: UUID | None = None,
        supersedes: Sequence[UUID] | None = None,
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
    ) -> Memory:
        """Embed `content` and store it as a memory of tenant (agent_id, user_id). Sent
        with `id` (default: a new UUID made here), so that a retry after a lost answer
        stores once: the service answers a repeat with the memory it stored."""
        values = _given(locals())
        values["id"] = id if id is not None else uuid.uuid4()
        if supersedes is not None:
            values["supersedes"] = list(supersedes)
        return _as(Memory, await self._request("store", values))

    async def store_many(self, items: Sequence[Any]) -> list[Memory]:
        """Embed and store many memories (dicts or pydantic models of the fields of
        `store`) in one statement, all or nothing; returned in input order. Each is sent
        with an `id` (a new UUID where an item has none), so that a retry stores once."""
        if not items:
            raise InvalidArgument("memories", "must hold at least one memory")
        memories = [
            item.model_dump(exclude_unset=True) if isinstance(item, BaseModel) else dict(item)
            for item in items
        ]
        for memory in memories:
            if memory.get("id") is None:
                memory["id"] = uuid.uuid4()
        answer = await self._request("store_many", {"memories": memories})
        return _as(list[Memory], answer["memories"])

    async def put_memories(
        self,
        agent_id: str,
        user_id: str,
        memories: Sequence[Mapping[str, Any]],
        *,
        memory_type: MemoryType | str = MemoryType.SEMANTIC,
    ) -> list[Memory]:
        """Upsert or delete many memories of the tenant by id, in order, in one request:
        each item is `{"id", "content", "metadata"?, "expires_at"?}`; a content stores the
        memory with that id or replaces it in place (created_at kept), a null content
        deletes it (nothing to delete is no error). Returns the memories written."""
        body = {
            "agent_id": agent_id,
            "user_id": user_id,
            "memory_type": memory_type,
            "memories": [dict(m) for m in memories],
        }
        answer = await self._request("put_memories", body)
        return _as(list[Memory], answer["memories"])

    async def get_memories(
        self, agent_id: str, user_id: str, memory_ids: Sequence[UUID]
    ) -> list[Memory]:
        """Many memories of the tenant by id in one request, in the order of the ids;
        those it does not have (or no longer) are left out."""
        body = {"agent_id": agent_id, "user_id": user_id, "memory_ids": list(memory_ids)}
        answer = await self._request("get_memories", body)
        return _as(list[Memory], answer["memories"])

    async def refresh_memories(
        self, agent_id: str, user_id: str, memories: Sequence[Mapping[str, Any]]
    ) -> int:
        """Set the expiry of many memories of the tenant by id in one request: each item
        is `{"id", "expires_at"}` (null: never); content, metadata and updated_at stay,
        ids the tenant has not (or no longer) are skipped. Returns how many it set."""
        body = {
            "agent_id": agent_id,
            "user_id": user_id,
            "memories": [dict(m) for m in memories],
        }
        answer = await self._request("refresh_memories", body)
        return int(answer["refreshed"])

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def search(
        self,
        agent_id: str,
        user_id: str,
        query: str,
        *,
        top_k: int = 10,
        alpha: float | None = None,
        half_life_days: float | None = None,
        memory_types: Sequence[MemoryType | str] | None = None,
        mode: SearchMode | str | None = None,
        context_weight: float | None = None,
        metadata: dict[str, Any] | None = None,
        include_archived: bool = False,
        include_superseded: bool = False,
        as_of: datetime | None = None,
        valid_at: datetime | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        now: datetime | None = None,
    ) -> list[SearchHit]:
        """Rank the tenant's memories for `query` (see AsyncMemex.search)."""
        values = _given(locals())
        if memory_types is not None:
            values["memory_types"] = list(memory_types)
        answer = await self._request("search", values)
        return _as(list[SearchHit], answer["results"])

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def forget(self, agent_id: str, user_id: str, memory_id: UUID) -> None:
        """Delete one memory of the tenant; raises NotFound if it is not theirs. (The
        service answers 204 without the memory: None, where AsyncMemex returns it.)"""
        await self._request("forget", _given(locals()))

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def count(
        self,
        agent_id: str,
        user_id: str,
        memory_type: MemoryType | str | None = None,
        *,
        metadata: dict[str, Any] | None = None,
    ) -> int:
        """Number of live memories of the tenant (see AsyncMemex.count)."""
        answer = await self._request("count", _given(locals()))
        return int(answer["count"])

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def get(
        self, agent_id: str, user_id: str, memory_id: UUID, *, as_of: datetime | None = None
    ) -> Memory:
        """One memory of the tenant by id (with `as_of`: as it was then); raises NotFound
        if it is not theirs."""
        return _as(Memory, await self._request("get", _given(locals())))

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def list_memories(
        self,
        agent_id: str,
        user_id: str,
        *,
        limit: int = 50,
        cursor: str | None = None,
        memory_type: MemoryType | str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        metadata: dict[str, Any] | None = None,
        include_archived: bool = False,
    ) -> MemoryPage:
        """A page of the tenant's live memories, newest first (see iter_memories)."""
        return _as(MemoryPage, await self._request("list_memories", _given(locals())))

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def iter_memories(
        self,
        agent_id: str,
        user_id: str,
        *,
        limit: int = 50,
        memory_type: MemoryType | str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        metadata: dict[str, Any] | None = None,
        include_archived: bool = False,
    ) -> AsyncIterator[Memory]:
        """Every memory list_memories pages through, `limit` per request."""
        async for item in self._pages("list_memories", "memories", _given(locals())):
            yield _as(Memory, item)

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def update(
        self,
        agent_id: str,
        user_id: str,
        memory_id: UUID,
        *,
        content: str | None = None,
        importance: float | None = None,
        metadata: dict[str, Any] | None = None,
        memory_type: MemoryType | str | None = None,
        expires_at: datetime | None = None,
        supersedes: Sequence[UUID] | None = None,
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
        clear_expires_at: bool = False,
        clear_valid_to: bool = False,
    ) -> Memory:
        """Change the given fields of one live memory (see AsyncMemex.update)."""
        values = {k: v for k, v in _given(locals()).items() if v is not None}
        del values["clear_expires_at"], values["clear_valid_to"]
        if clear_expires_at:
            if expires_at is not None:
                raise InvalidArgument("expires_at", "cannot be set and cleared at once")
            values["expires_at"] = None
        if clear_valid_to:
            if valid_to is not None:
                raise InvalidArgument("valid_to", "cannot be set and cleared at once")
            values["valid_to"] = None
        if supersedes is not None:
            values["supersedes"] = list(supersedes)
        if values.keys() <= {"agent_id", "user_id", "memory_id"}:
            raise InvalidArgument("patch", "must change at least one field")
        return _as(Memory, await self._request("update", values))

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def memory_history(
        self,
        agent_id: str,
        user_id: str,
        memory_id: UUID,
        *,
        limit: int = 50,
        before: int | None = None,
    ) -> list[MemoryRevision]:
        """The revisions of one memory, newest first (see AsyncMemex.memory_history)."""
        answer = await self._request("memory_history", _given(locals()))
        return _as(list[MemoryRevision], answer["revisions"])

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def iter_memory_history(
        self, agent_id: str, user_id: str, memory_id: UUID, *, limit: int = 50
    ) -> AsyncIterator[MemoryRevision]:
        """Every revision of one memory, newest first, `limit` per request."""
        async for item in self._pages("memory_history", "revisions", _given(locals())):
            yield _as(MemoryRevision, item)

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def memory_revision_diff(
        self, agent_id: str, user_id: str, memory_id: UUID, from_revision: int, to_revision: int
    ) -> dict[str, Any]:
        """What changed in a memory between two revisions: {"content", "fields"}."""
        answer = await self._request("memory_revision_diff", _given(locals()))
        return {"content": answer["content"], "fields": answer["fields"]}

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def revert_memory(
        self, agent_id: str, user_id: str, memory_id: UUID, revision: int
    ) -> Memory:
        """Make what a memory said at `revision` current again (a new revision)."""
        return _as(Memory, await self._request("revert_memory", _given(locals())))

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def erase_user(self, agent_id: str, user_id: str, *, confirm: str) -> dict[str, int]:
        """Delete everything of the tenant (admin keys only; `confirm` must repeat
        `user_id`); the rows deleted per table."""
        answer = await self._request("erase_user", _given(locals()))
        return {str(k): int(v) for k, v in answer["deleted"].items()}

    async def export(
        self,
        agent_id: str,
        user_id: str | None = None,
        *,
        embeddings: bool = False,
        batch_size: int = DEFAULT_EXPORT_BATCH,
        memory_revisions: bool = True,
    ) -> AsyncIterator[dict[str, Any]]:
        """Every memory of the agent's user (or of all its users) and its history as
        JSON-ready dicts, streamed from GET /v1/export (NDJSON; `batch_size` is the
        server's to choose and is accepted for AsyncMemex's signature; false
        `memory_revisions` leaves the memories' revisions out)."""
        params = query_params(
            {
                "agent_id": agent_id,
                "user_id": user_id,
                "embeddings": embeddings,
                "memory_revisions": memory_revisions,
            }
        )
        response = await self._http.send(
            "GET", "/v1/export", params=params, resend=True, stream=True
        )
        try:
            async for line in response.aiter_lines():
                if line.strip():
                    yield json.loads(line)
        finally:
            await response.aclose()

    async def import_memories(
        self,
        records: ImportSource,
        *,
        batch_size: int = DEFAULT_EXPORT_BATCH,
    ) -> ImportResult:
        """Import an export as it was (see AsyncMemex.import_memories): POST /v1/import,
        the records streamed as JSON Lines from an iterable (or async iterable) of dicts
        as `export` yields them, or from a file (a path: its lines are sent as they are).
        Needs the operator's key or an admin key of the agent. The body is streamed, so
        the request is sent once, not retried: an import run again skips what it had
        inserted. `batch_size` is the server's to choose (AsyncMemex's signature)."""
        response = await self._http.send(
            "POST",
            "/v1/import",
            content=_ndjson(records),
            headers={"Content-Type": "application/x-ndjson"},
        )
        answer = response.json()
        return ImportResult(
            imported=int(answer["imported"]),
            skipped=int(answer["skipped"]),
            reembedded=int(answer["reembedded"]),
            kinds={
                str(k): {str(f): int(n) for f, n in v.items()} for k, v in answer["kinds"].items()
            },
            access_log_expiring=int(answer["access_log_expiring"]),
        )

    # --- files ---

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def write_file(
        self,
        agent_id: str,
        user_id: str,
        path: str,
        content: str,
        *,
        base_revision: int | None = None,
    ) -> File:
        """Create or overwrite the file at `path` (see AsyncMemex.write_file)."""
        return _as(File, await self._request("write_file", _given(locals())))

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def read_file(
        self,
        agent_id: str,
        user_id: str,
        path: str,
        *,
        from_line: int | None = None,
        to_line: int | None = None,
        as_of: datetime | None = None,
    ) -> File:
        """The file at `path` (see AsyncMemex.read_file)."""
        return _as(File, await self._request("read_file", _given(locals())))

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def list_files(
        self,
        agent_id: str,
        user_id: str,
        *,
        prefix: str | None = None,
        limit: int = 50,
        after: str | None = None,
    ) -> tuple[list[FileEntry], str | None]:
        """A page of the tenant's files under `prefix`, in path order, and the `after` of
        the next page (None: this is the last)."""
        answer = await self._request("list_files", _given(locals()))
        return _as(list[FileEntry], answer["files"]), answer["next_after"]

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def iter_files(
        self, agent_id: str, user_id: str, *, prefix: str | None = None, limit: int = 50
    ) -> AsyncIterator[FileEntry]:
        """Every file list_files pages through."""
        async for item in self._pages("list_files", "files", _given(locals())):
            yield _as(FileEntry, item)

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def patch_file(
        self,
        agent_id: str,
        user_id: str,
        path: str,
        *,
        heading: str | None = None,
        append: str | None = None,
        old_text: str | None = None,
        new_text: str | None = None,
        base_revision: int | None = None,
    ) -> File:
        """Append under a heading, or replace one occurrence (see AsyncMemex.patch_file)."""
        values = {k: v for k, v in _given(locals()).items() if v is not None}
        return _as(File, await self._request("patch_file", values))

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def delete_file(
        self, agent_id: str, user_id: str, path: str, *, base_revision: int | None = None
    ) -> File:
        """Delete the file at `path` and return it as it was."""
        return _as(File, await self._request("delete_file", _given(locals())))

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def list_revisions(
        self, agent_id: str, user_id: str, path: str, *, limit: int = 50, before: int | None = None
    ) -> list[FileRevision]:
        """The revisions of a file, newest first, without content."""
        answer = await self._request("list_revisions", _given(locals()))
        return _as(list[FileRevision], answer["revisions"])

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def iter_revisions(
        self, agent_id: str, user_id: str, path: str, *, limit: int = 50
    ) -> AsyncIterator[FileRevision]:
        """Every revision of a file, newest first."""
        async for item in self._pages("list_revisions", "revisions", _given(locals())):
            yield _as(FileRevision, item)

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def get_revision(
        self, agent_id: str, user_id: str, path: str, revision: int
    ) -> FileRevision:
        """One revision of a file with its content (None for a delete)."""
        return _as(FileRevision, await self._request("get_revision", _given(locals())))

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def diff_revisions(
        self, agent_id: str, user_id: str, path: str, from_revision: int, to_revision: int
    ) -> str:
        """A unified diff from one revision of a file to another."""
        answer = await self._request("diff_revisions", _given(locals()))
        return str(answer["diff"])

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def restore_revision(
        self,
        agent_id: str,
        user_id: str,
        path: str,
        revision: int,
        *,
        base_revision: int | None = None,
    ) -> File:
        """Make `revision` of a file its current content again."""
        return _as(File, await self._request("restore_revision", _given(locals())))

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def smart_read(
        self, agent_id: str, user_id: str, query: str, *, budget: int = 4000
    ) -> SmartRead:
        """One context block of at most `budget` characters for `query`."""
        return _as(SmartRead, await self._request("smart_read", _given(locals())))

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def access_log(
        self,
        agent_id: str,
        user_id: str,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 100,
        before: int | None = None,
    ) -> list[AccessEvent]:
        """The tenant's access log, newest first (see iter_access_log)."""
        answer = await self._request("access_log", _given(locals()))
        return _as(list[AccessEvent], answer["events"])

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def iter_access_log(
        self,
        agent_id: str,
        user_id: str,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 100,
    ) -> AsyncIterator[AccessEvent]:
        """Every event access_log pages through."""
        async for item in self._pages("access_log", "events", _given(locals())):
            yield _as(AccessEvent, item)

    # --- the LLM layer (memexdb.agentic on the server) and embeddings ---

    async def memorize(self, agent_id: str, user_id: str, text: str) -> dict[str, Any]:
        """POST /v1/memorize (memexdb.agentic.memorize): the path that ran, the changes
        applied, the decisions per fact and the refusals, as JSON."""
        result: dict[str, Any] = await self._request("memorize", _given(locals()))
        return result

    async def search_passages(
        self,
        agent_id: str,
        user_id: str,
        query: str,
        *,
        top_k: int = DEFAULT_PASSAGES_TOP_K,
        passage_chars: int = DEFAULT_PASSAGE_CHARS,
        answer: bool = False,
    ) -> dict[str, Any]:
        """POST /v1/memory-search (memexdb.agentic.search_passages), as JSON."""
        result: dict[str, Any] = await self._request("search_passages", _given(locals()))
        return result

    async def embed_texts(
        self, texts: str | Sequence[str], *, model: str | None = None
    ) -> Embeddings:
        """Vectors of `texts` by the service's model; `vectors` is a list of lists of
        floats here (AsyncMemex gives a numpy array)."""
        given = texts if isinstance(texts, str) else list(texts)
        answer = await self._request("embed_texts", {"input": given, "model": model})
        data = sorted(answer["data"], key=lambda item: item["index"])
        vectors = [[float(x) for x in item["embedding"]] for item in data]
        return Embeddings(vectors, str(answer["model"]), int(answer["usage"]["total_tokens"]))

    # --- admin ---

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def create_key(
        self,
        access: Access | str,
        *,
        agent_id: str | None = None,
        user_ids: Sequence[str] | None = None,
        name: str = "",
        expires_at: datetime | None = None,
    ) -> CreatedKey:
        """Create an API key (admin); its token is in the result, and nowhere else."""
        values = _given(locals())
        if user_ids is not None:
            values["user_ids"] = list(user_ids)
        return _as(CreatedKey, await self._request("create_key", values))

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def list_keys(self, agent_id: str | None = None) -> list[ApiKey]:
        """The API keys this (admin) caller may manage, newest first, without secrets."""
        answer = await self._request("list_keys", _given(locals()))
        return _as(list[ApiKey], answer["keys"])

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def revoke_key(self, key: str, confirm_last: bool = False) -> RevokedKey:
        """Revoke an API key by id or prefix; Conflict for the last live key of this
        admin's scope unless confirm_last."""
        return _as(RevokedKey, await self._request("revoke_key", _given(locals())))

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def audit_events(self, limit: int = 100, before: int | None = None) -> list[AuditEvent]:
        """The audit log within this (admin) caller's scope, newest first."""
        answer = await self._request("audit_events", _given(locals()))
        return _as(list[AuditEvent], answer["events"])

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def iter_audit_events(self, limit: int = 100) -> AsyncIterator[AuditEvent]:
        """Every audit event audit_events pages through."""
        async for item in self._pages("audit_events", "events", _given(locals())):
            yield _as(AuditEvent, item)

    async def dream_config(self) -> dict[str, Any]:
        """The consolidation settings, as JSON (GET /v1/admin/dream/config)."""
        result: dict[str, Any] = await self._request("dream_config", {})
        return result

    async def set_dream_config(self, /, **changes: Any) -> dict[str, Any]:
        """Change consolidation settings (admin); the whole configuration after."""
        result: dict[str, Any] = await self._request("set_dream_config", changes)
        return result

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def consolidation_runs(
        self,
        agent_id: str | None = None,
        user_id: str | None = None,
        *,
        limit: int = 100,
        before: int | None = None,
    ) -> list[ConsolidationRun]:
        """Consolidation runs, newest first: of a tenant, an agent, or every tenant."""
        answer = await self._request("consolidation_runs", _given(locals()))
        return _as(list[ConsolidationRun], answer["runs"])

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def iter_consolidation_runs(
        self, agent_id: str | None = None, user_id: str | None = None, *, limit: int = 100
    ) -> AsyncIterator[ConsolidationRun]:
        """Every run consolidation_runs pages through."""
        async for item in self._pages("consolidation_runs", "runs", _given(locals())):
            yield _as(ConsolidationRun, item)

    async def dream_users(
        self,
        agent_id: str | None = None,
        *,
        limit: int = DEFAULT_RUNS_LIMIT,
        after: tuple[str, str] | None = None,
    ) -> list[DreamUser]:
        """Each tenant's consolidation status (admin), in (agent_id, user_id) order after
        `after`."""
        cursor = _tenant_cursor(*after) if after is not None else None
        values = {"agent_id": agent_id, "limit": limit, "after": cursor}
        answer = await self._request("dream_users", values)
        return _as(list[DreamUser], answer["users"])

    async def iter_dream_users(
        self, agent_id: str | None = None, *, limit: int = DEFAULT_RUNS_LIMIT
    ) -> AsyncIterator[DreamUser]:
        """Every tenant dream_users pages through."""
        async for item in self._pages("dream_users", "users", _given(locals())):
            yield _as(DreamUser, item)

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def set_dream_paused(self, agent_id: str, user_id: str, paused: bool) -> bool:
        """Pause or resume consolidation of one tenant (admin, audited)."""
        answer = await self._request("set_dream_paused", _given(locals()))
        return bool(answer["paused"])

    # signature: generated by tools/generate_signatures.py (from the request model)
    async def restore_consolidation(
        self, run_id: int, *, agent_id: str | None = None
    ) -> ConsolidationRun:
        """Undo a condense run: its sources live again, its summary archived."""
        return _as(ConsolidationRun, await self._request("restore_consolidation", _given(locals())))

    async def run_now(
        self,
        agent_id: str | None = None,
        user_id: str | None = None,
        *,
        dry_run: bool = False,
        force: bool = False,
    ) -> RunNowResult:
        """POST /v1/admin/dream/run: a consolidation tick now (no tenant) or one tenant's
        run (memex.call(agentic.RUN_NOW, ...) in-process): the runs, and the tenant's
        steps that were skipped (`skipped`: step and reason) because another runner (the
        scheduler) held the tenant's consolidation lock."""
        values = _given(locals())
        answer = await self._request("run_now", values)
        return _as(RunNowResult, {"runs": answer["runs"], "skipped": answer["skipped"]})


def _tenant_cursor(agent_id: str, user_id: str) -> str:
    """memexdb.consolidation.models.encode_tenant_cursor: `after` of GET /v1/admin/dream/users."""
    return f"{agent_id.encode().hex()}.{user_id.encode().hex()}"


# --- the synchronous client: AsyncMemexClient's methods on a private event loop ---


ImportSource = Iterable[dict[str, Any]] | AsyncIterable[dict[str, Any]] | str | os.PathLike[str]
_CHUNK_BYTES = 256 * 1024  # the size of a streamed body's writes


async def _ndjson(records: ImportSource) -> AsyncIterator[bytes]:
    """The body of POST /v1/import: a file's bytes as they are, or one JSON line per dict,
    sent in chunks of about _CHUNK_BYTES."""
    if isinstance(records, (str, os.PathLike)):
        lines = await asyncio.to_thread(open, records, "rb")
        try:
            while chunk := await asyncio.to_thread(lines.read, _CHUNK_BYTES):
                yield chunk
        finally:
            lines.close()
        return
    pending: list[bytes] = []
    size = 0

    async def each() -> AsyncIterator[dict[str, Any]]:
        if isinstance(records, AsyncIterable):
            async for record in records:
                yield record
        else:
            for record in records:
                yield record

    async for record in each():
        line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode()
        pending.append(line)
        size += len(line)
        if size >= _CHUNK_BYTES:
            yield b"".join(pending)
            pending, size = [], 0
    if pending:
        yield b"".join(pending)


class MemexClient:
    """The synchronous client: AsyncMemexClient's methods, blocking (one event loop
    thread and one keep-alive connection pool per client; close it, or use `with`)."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout = 30.0,
        retries: int | Retries = 4,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._loop = LoopThread("memexdb-client")

        async def build() -> AsyncMemexClient:  # the httpx client belongs to that loop
            return AsyncMemexClient(
                base_url, api_key, timeout=timeout, retries=retries, transport=transport
            )

        self._async = self._loop.run(build())

    def close(self) -> None:
        try:
            self._loop.run(self._async.aclose())
        finally:
            self._loop.stop()

    def __enter__(self) -> MemexClient:
        return self

    @property
    def session_token(self) -> str | None:
        """The latest Memex-Write-LSN the service answered this client (None: none yet)."""
        return self._async.session_token

    def __exit__(self, *exc: object) -> None:
        self.close()

    store = blocking(AsyncMemexClient.store)
    store_many = blocking(AsyncMemexClient.store_many)
    put_memories = blocking(AsyncMemexClient.put_memories)
    get_memories = blocking(AsyncMemexClient.get_memories)
    refresh_memories = blocking(AsyncMemexClient.refresh_memories)
    memory_history = blocking(AsyncMemexClient.memory_history)
    memory_revision_diff = blocking(AsyncMemexClient.memory_revision_diff)
    revert_memory = blocking(AsyncMemexClient.revert_memory)
    search = blocking(AsyncMemexClient.search)
    forget = blocking(AsyncMemexClient.forget)
    count = blocking(AsyncMemexClient.count)
    get = blocking(AsyncMemexClient.get)
    list_memories = blocking(AsyncMemexClient.list_memories)
    iter_memories = iterating(AsyncMemexClient.iter_memories)
    update = blocking(AsyncMemexClient.update)
    erase_user = blocking(AsyncMemexClient.erase_user)
    export = iterating(AsyncMemexClient.export)
    import_memories = blocking(AsyncMemexClient.import_memories)
    write_file = blocking(AsyncMemexClient.write_file)
    read_file = blocking(AsyncMemexClient.read_file)
    list_files = blocking(AsyncMemexClient.list_files)
    iter_files = iterating(AsyncMemexClient.iter_files)
    patch_file = blocking(AsyncMemexClient.patch_file)
    delete_file = blocking(AsyncMemexClient.delete_file)
    list_revisions = blocking(AsyncMemexClient.list_revisions)
    iter_revisions = iterating(AsyncMemexClient.iter_revisions)
    iter_memory_history = iterating(AsyncMemexClient.iter_memory_history)
    get_revision = blocking(AsyncMemexClient.get_revision)
    diff_revisions = blocking(AsyncMemexClient.diff_revisions)
    restore_revision = blocking(AsyncMemexClient.restore_revision)
    smart_read = blocking(AsyncMemexClient.smart_read)
    access_log = blocking(AsyncMemexClient.access_log)
    iter_access_log = iterating(AsyncMemexClient.iter_access_log)
    memorize = blocking(AsyncMemexClient.memorize)
    search_passages = blocking(AsyncMemexClient.search_passages)
    embed_texts = blocking(AsyncMemexClient.embed_texts)
    create_key = blocking(AsyncMemexClient.create_key)
    list_keys = blocking(AsyncMemexClient.list_keys)
    revoke_key = blocking(AsyncMemexClient.revoke_key)
    audit_events = blocking(AsyncMemexClient.audit_events)
    iter_audit_events = iterating(AsyncMemexClient.iter_audit_events)
    dream_config = blocking(AsyncMemexClient.dream_config)
    set_dream_config = blocking(AsyncMemexClient.set_dream_config)
    consolidation_runs = blocking(AsyncMemexClient.consolidation_runs)
    iter_consolidation_runs = iterating(AsyncMemexClient.iter_consolidation_runs)
    dream_users = blocking(AsyncMemexClient.dream_users)
    iter_dream_users = iterating(AsyncMemexClient.iter_dream_users)
    set_dream_paused = blocking(AsyncMemexClient.set_dream_paused)
    restore_consolidation = blocking(AsyncMemexClient.restore_consolidation)
    run_now = blocking(AsyncMemexClient.run_now)
