"""The memory operations: store, search, read, list, count, change, forget, erase.

Each is a function of a Session and its validated request (embed at most one field, call
one memex.* function) and its declaration (memexdb.operation), from which the Python
methods, the REST endpoints and the MCP tools are built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

import numpy as np
from psycopg.types.json import Jsonb

from memexdb import metrics
from memexdb.consolidation import sql as consolidation_sql
from memexdb.error_models import ErrorResponse, validated
from memexdb.fields import TenantQuery
from memexdb.files import sql as files_sql
from memexdb.memories import sql
from memexdb.memories.models import (
    CountQuery,
    CountResponse,
    Deleted,
    ErasedResponse,
    EraseUserRequest,
    ExportedMemory,
    ExportPageQuery,
    FactCheck,
    ForgetQuery,
    HistoryImport,
    HistoryPageQuery,
    ListQuery,
    MemoryBatchCreate,
    MemoryBatchResponse,
    MemoryCreate,
    MemoryDiff,
    MemoryDiffOut,
    MemoryDiffQuery,
    MemoryForget,
    MemoryHistory,
    MemoryHistoryQuery,
    MemoryIds,
    MemoryImport,
    MemoryLookup,
    MemoryOut,
    MemoryPage,
    MemoryPatch,
    MemoryPutBatch,
    MemoryReadQuery,
    MemoryRef,
    MemoryRefreshBatch,
    MemoryRetire,
    MemoryRevert,
    MemoryRevertBody,
    MemoryRevisionList,
    MemoryRevisionOut,
    MemorySearchRequest,
    MemoryStore,
    MemoryUpdate,
    RefreshedResponse,
    SearchResponse,
    decode_cursor,
    encode_cursor,
)
from memexdb.operation import Operation, Paging, Reply, Route, Tool, fetch_first
from memexdb.paging import after_params, next_key
from memexdb.session import Session, jsonb_or_none
from memexdb.types import (
    ErasedRows,
    ExportRow,
    HistoryRow,
    Memory,
    MemoryRevision,
    SearchHit,
    SearchMode,
)
from memexdb.types import MemoryPage as Page

# where the next page of an export starts: (user_id, created_at, id) of the last row
ExportCursor = tuple[str, datetime, UUID] | None

_NOT_FOUND = Reply(404, "No such live memory for this tenant (or an id that is not a UUID)")
_ID = {"id": "memory_id"}  # the MCP tools' name of the id (memex's tools)
_IS_A_FILE = Reply(
    409, "The memory is a file: change or delete it by its path (/v1/files)", ErrorResponse
)
_TENANT = "for the tenant (agent_id, user_id)"


def store_params(
    items: Sequence[MemoryCreate | ExportedMemory],
    embeddings: np.ndarray | Sequence[np.ndarray],
    model: str,
) -> dict[str, Any]:
    """The arrays of memex.store_many for these items and their vectors."""
    return {
        "agent_ids": [i.agent_id for i in items],
        "user_ids": [i.user_id for i in items],
        "contents": [i.content for i in items],
        "embeddings": list(embeddings),
        "embedding_model": model,
        "memory_types": [str(i.memory_type) for i in items],
        "importances": [i.importance for i in items],
        "metadata": [Jsonb(i.metadata if i.metadata is not None else {}) for i in items],
        "expires_at": [i.expires_at for i in items],
        "created_at": [i.created_at for i in items],
    }


async def store(session: Session, item: MemoryStore | MemoryCreate) -> Memory:
    reservation = await session.reserve("store", [(item.agent_id, item.user_id)])
    embedding = await session.embedder.embed_one(item.content)
    values = {
        **item.model_dump(exclude={"memory_type", "metadata"}),
        "memory_type": str(item.memory_type),
        "metadata": Jsonb(item.metadata if item.metadata is not None else {}),
        "embedding": embedding,
        "embedding_model": session.model_id,
        "id": getattr(item, "id", None),  # a MemoryCreate (memorize's fallback) has none
        "supersedes": getattr(item, "supersedes", None),
        "valid_from": getattr(item, "valid_from", None),
        "valid_to": getattr(item, "valid_to", None),
    }
    rows: list[Memory] = await session.fetch(Memory, sql.STORE, values, reservation=reservation)
    metrics.count_by_type(metrics.MEMORIES_STORED, rows)
    return rows[0]


async def store_many(session: Session, batch: MemoryBatchCreate) -> list[Memory]:
    items = batch.memories
    # the whole batch's budget first: a caller over its limit embeds nothing
    reservation = await session.reserve("store", [(i.agent_id, i.user_id) for i in items])
    embeddings = await session.embedder.embed_many([i.content for i in items])
    ids = [getattr(i, "id", None) for i in items]  # (a MemoryCreate has none)
    stored: list[Memory] = await session.fetch(
        Memory,
        sql.STORE_MANY,
        {
            **store_params(items, embeddings, session.model_id),
            "ids": ids if any(i is not None for i in ids) else None,
            "supersedes": _batch_supersedes(items),
        },
        reservation=reservation,
        batch=len(items),  # a batch's budget, not one store's (memex._batch_budget)
    )
    metrics.count_by_type(metrics.MEMORIES_STORED, stored)
    return stored


async def put_memories(session: Session, batch: MemoryPutBatch) -> list[Memory]:
    items = batch.memories
    puts = [i for i in items if i.content is not None]
    reservation = None
    vectors: dict[int, np.ndarray] = {}
    if puts:
        reservation = await session.reserve("store", [(batch.agent_id, batch.user_id)] * len(items))
        # a text the batch holds twice is embedded once
        texts = list(dict.fromkeys(i.content or "" for i in puts))
        embedded = dict(zip(texts, await session.embedder.embed_many(texts), strict=True))
        vectors = {id(i): embedded[i.content or ""] for i in puts}
    written: list[Memory] = await session.fetch(
        Memory,
        sql.PUT_MEMORIES,
        {
            "agent_id": batch.agent_id,
            "user_id": batch.user_id,
            "ids": [i.id for i in items],
            "contents": [i.content for i in items],
            "embeddings": [vectors.get(id(i)) for i in items],
            "embedding_model": session.model_id,
            "metadata": [Jsonb(i.metadata if i.metadata is not None else {}) for i in items],
            "memory_type": str(batch.memory_type),
            "expires_at": [i.expires_at for i in items],
        },
        reservation=reservation,
        batch=len(items),
    )
    metrics.count_by_type(metrics.MEMORIES_STORED, written)
    return written


async def refresh_memories(session: Session, batch: MemoryRefreshBatch) -> int:
    rows = await session.fetch(
        None,
        sql.REFRESH_MEMORIES,
        {
            "agent_id": batch.agent_id,
            "user_id": batch.user_id,
            "ids": [i.id for i in batch.memories],
            "expires_at": [i.expires_at for i in batch.memories],
        },
    )
    return int(rows[0])


async def get_memories(session: Session, lookup: MemoryLookup) -> list[Memory]:
    found: list[Memory] = await session.fetch(
        Memory,
        sql.GET_MEMORIES,
        {"agent_id": lookup.agent_id, "user_id": lookup.user_id, "ids": lookup.memory_ids},
    )
    return found


def _batch_supersedes(items: Sequence[MemoryCreate]) -> list[Jsonb | None] | None:
    """memex.store_many's p_supersedes: per item a JSON array of ids, or null (None: no
    item supersedes anything)."""
    lists = [getattr(i, "supersedes", None) for i in items]  # (a MemoryCreate has none)
    if not any(lists):
        return None
    return [Jsonb([str(u) for u in ids]) if ids else None for ids in lists]


async def search(session: Session, request: MemorySearchRequest) -> list[SearchHit]:
    reservation, embedding = None, None
    if request.mode != SearchMode.TEXT:  # (a text search embeds nothing: SQL counts it)
        reservation = await session.reserve("search", [(request.agent_id, request.user_id)])
        embedding = await session.embedder.embed_one(request.query)
    types = request.types()
    hits: list[SearchHit] = await session.fetch(
        SearchHit,
        sql.SEARCH,
        # every request field named as a parameter of memex.search (filters, weights) goes
        # as it is; these are the others
        sql.SEARCH.arguments(
            request,
            query_embedding=embedding,
            query_text=request.query,
            embedding_model=session.model_id,
            memory_types=[str(t) for t in types] if types else None,
            mode=None if request.mode is None else str(request.mode),
            metadata=jsonb_or_none(request.metadata),
        ),
        reservation=reservation,
    )
    metrics.count_by_type(metrics.MEMORIES_SEARCHED, hits)
    return hits


async def get(session: Session, ref: MemoryRef) -> Memory:
    rows: list[Memory] = await session.fetch(
        Memory,
        sql.GET_MEMORY,
        {**ref.model_dump(include={"agent_id", "user_id", "as_of"}), "id": ref.memory_id},
    )
    return rows[0]


async def forget(session: Session, ref: MemoryForget) -> Memory:
    rows: list[Memory] = await session.fetch(
        Memory,
        sql.FORGET,
        {"agent_id": ref.agent_id, "user_id": ref.user_id, "id": ref.memory_id},
    )
    deleted = rows[0]
    metrics.count_by_type(metrics.MEMORIES_DELETED, [deleted])
    return deleted


async def count(session: Session, query: CountQuery) -> int:
    values = {
        **query.model_dump(include={"agent_id", "user_id"}),
        "memory_type": str(query.memory_type) if query.memory_type else None,
        "embedding_model": session.model_id,
        "metadata": jsonb_or_none(query.metadata),
    }
    return int((await session.fetch(None, sql.COUNT, values))[0])


async def list_memories(session: Session, query: ListQuery) -> Page:
    after = decode_cursor(query.cursor) if query.cursor else (None, None)
    rows: list[Memory] = await session.fetch(
        Memory,
        sql.LIST_MEMORIES,
        sql.LIST_MEMORIES.arguments(
            query,
            cursor_created_at=after[0],
            cursor_id=after[1],
            memory_type=str(query.memory_type) if query.memory_type else None,
            metadata=jsonb_or_none(query.metadata),
        ),
    )
    cursor = next_key(rows, query.limit, lambda row: encode_cursor(row.created_at, row.id))
    return Page(rows, cursor)


async def update(session: Session, patch: MemoryUpdate) -> Memory:
    reservation, embedding = None, None
    if patch.content is not None:  # paid for before it is embedded
        reservation = await session.reserve("store", [(patch.agent_id, patch.user_id)])
        embedding = await session.embedder.embed_one(patch.content)
    rows: list[Memory] = await session.fetch(
        Memory,
        sql.UPDATE_MEMORY,
        {
            **patch.model_dump(include={"agent_id", "user_id", "content", "importance"}),
            "id": patch.memory_id,
            "embedding": embedding,
            "embedding_model": session.model_id if embedding is not None else None,
            "metadata": jsonb_or_none(patch.metadata),
            "memory_type": str(patch.memory_type) if patch.memory_type else None,
            "expires_at": patch.expires_at,
            "clear_expires_at": patch.clear_expires_at,
            "supersedes": patch.supersedes,
            "valid_from": patch.valid_from,
            "valid_to": patch.valid_to,
            "clear_valid_to": patch.clear_valid_to,
        },
        reservation=reservation,
    )
    return rows[0]


async def memory_history(session: Session, query: MemoryHistory) -> list[MemoryRevision]:
    rows: list[MemoryRevision] = await session.fetch(
        MemoryRevision,
        sql.LIST_MEMORY_REVISIONS,
        {
            **query.model_dump(include={"agent_id", "user_id", "limit", "before"}),
            "id": query.memory_id,
        },
    )
    return rows


async def memory_revision_diff(session: Session, query: MemoryDiff) -> dict[str, Any]:
    rows = await session.fetch(
        None,
        sql.DIFF_MEMORY_REVISIONS,
        {
            **query.model_dump(include={"agent_id", "user_id", "from_revision", "to_revision"}),
            "id": query.memory_id,
        },
    )
    diff: dict[str, Any] = rows[0]
    return diff


async def revert_memory(session: Session, request: MemoryRevert) -> Memory:
    # (SQL charges the store rate limit and queues the restored text for the embed worker)
    rows: list[Memory] = await session.fetch(
        Memory,
        sql.REVERT_MEMORY,
        {
            **request.model_dump(include={"agent_id", "user_id", "revision"}),
            "id": request.memory_id,
        },
    )
    return rows[0]


async def erase_user(session: Session, request: EraseUserRequest) -> dict[str, int]:
    rows: list[ErasedRows] = await session.fetch(ErasedRows, sql.ERASE_USER, request.model_dump())
    return {row.table_name: row.deleted for row in rows}


def _searched(request: MemorySearchRequest, hits: list[SearchHit]) -> SearchResponse:
    # validated in one call, the hits read as SearchResults from their attributes: the same
    # answer as a model_validate per hit, ~40 % less time (bench/RESULTS.md, session 9)
    answer = {
        "agent_id": request.agent_id,
        "user_id": request.user_id,
        "query": request.query,
        "total": len(hits),
        "results": hits,
    }
    return SearchResponse.model_validate(answer, from_attributes=True)


def _history(query: MemoryHistory, rows: list[MemoryRevision]) -> MemoryRevisionList:
    before = rows[-1].revision if len(rows) == query.limit and rows[-1].revision > 1 else None
    return MemoryRevisionList(
        revisions=[MemoryRevisionOut.model_validate(r) for r in rows], next_before=before
    )


def _diffed(query: MemoryDiff, diff: dict[str, Any]) -> MemoryDiffOut:
    return MemoryDiffOut(
        memory_id=query.memory_id,
        from_revision=query.from_revision,
        to_revision=query.to_revision,
        content=diff.get("content") or "",
        fields=diff.get("fields") or {},
    )


def _counted(query: CountQuery, count: int) -> CountResponse:
    return CountResponse(
        **query.model_dump(include={"agent_id", "user_id", "memory_type"}), count=count
    )


def _page(_: ListQuery, page: Page) -> MemoryPage:
    memories = [MemoryOut.model_validate(m) for m in page.memories]
    return MemoryPage(memories=memories, next_cursor=page.next_cursor)


def _stored_many(
    _: MemoryBatchCreate | MemoryPutBatch, stored: list[Memory]
) -> MemoryBatchResponse:
    memories = [MemoryOut.model_validate(m) for m in stored]
    return MemoryBatchResponse(memories=memories, total=len(memories))


def _refreshed(_: MemoryRefreshBatch, refreshed: int) -> RefreshedResponse:
    return RefreshedResponse(refreshed=refreshed)


def _found_many(_: MemoryLookup, found: list[Memory]) -> MemoryBatchResponse:
    memories = [MemoryOut.model_validate(m) for m in found]
    return MemoryBatchResponse(memories=memories, total=len(memories))


STORE = Operation(
    name="store",
    summary="Store a memory",
    request=MemoryStore,
    run=store,
    response=MemoryOut,
    sql=("memex.store",),
    access="write",
    domain="memories",
    embeds="content",
    rest=Route(
        "POST",
        "/v1/memories",
        "Stored (or, for a repeat of the same memory with its id, the memory stored before)",
        status=201,
        errors=(
            Reply(404, "A memory named in supersedes is not one of this tenant's", ErrorResponse),
            Reply(409, "A memory with this id exists already with other content", ErrorResponse),
        ),
    ),
    tool=Tool(
        "store_memory",
        "Store a memory",
        "Remember something for later: store one memory (a fact, an event or a procedure)"
        f" {_TENANT}. Returns the stored memory with its id. When the new fact replaces an"
        " older one you found by search (the user moved, changed job, replaced the car),"
        " pass the older memory's id in `supersedes`: it stays in the history but leaves"
        " the default search, so the current version is what is recalled.",
    ),
)

STORE_MANY = Operation(
    name="store_many",
    summary="Store up to 1000 memories in one statement (imports)",
    request=MemoryBatchCreate,
    run=store_many,
    response=MemoryBatchResponse,
    answer=_stored_many,
    sql=("memex.store_many",),
    access="write",
    domain="memories",
    embeds="memories[].content",
    rest=Route(
        "POST",
        "/v1/memories/batch",
        "Stored, in input order (a repeat of the same memories with their ids: those stored"
        " before)",
        status=201,
        errors=(
            Reply(
                404,
                "A memory named in an item's supersedes is not one of its tenant's; nothing"
                " was stored",
                ErrorResponse,
            ),
            Reply(
                409,
                "A memory with one of the ids exists already with other content; nothing"
                " was stored",
                ErrorResponse,
            ),
        ),
    ),
)

PUT_MEMORIES = Operation(
    name="put_memories",
    summary="Upsert or delete up to 1000 memories of a tenant by id, in one statement",
    request=MemoryPutBatch,
    run=put_memories,
    response=MemoryBatchResponse,
    answer=_stored_many,
    sql=("memex.put_memories",),
    access="write",
    domain="memories",
    embeds="memories[].content",
    rest=Route(
        "PUT",
        "/v1/memories/batch",
        "The memories written (the upserts, in input order; deletes answer nothing)",
        errors=(
            Reply(
                409,
                "One of the ids is another tenant's memory or a file; nothing was written",
                ErrorResponse,
            ),
        ),
    ),
)

GET_MEMORIES = Operation(
    name="get_memories",
    summary="Read up to 1000 memories of a tenant by id in one request",
    request=MemoryLookup,
    run=get_memories,
    response=MemoryBatchResponse,
    answer=_found_many,
    sql=("memex.get_memories",),
    access="read",
    domain="memories",
    rest=Route(
        "POST",
        "/v1/memories/lookup",
        "The memories found, in the order of the ids (ids the tenant has not are left out)",
    ),
)

REFRESH_MEMORIES = Operation(
    name="refresh_memories",
    summary="Set the expiry of up to 1000 memories of a tenant by id, in one statement",
    request=MemoryRefreshBatch,
    run=refresh_memories,
    response=RefreshedResponse,
    answer=_refreshed,
    sql=("memex.refresh_memories",),
    access="write",
    domain="memories",
    rest=Route(
        "POST",
        "/v1/memories/expiry",
        "How many memories had their expiry set (ids the tenant has not are skipped)",
    ),
)

SEARCH = Operation(
    name="search",
    summary="Search a tenant's memories (relevance + recency + importance)",
    request=MemorySearchRequest,
    run=search,
    response=SearchResponse,
    answer=_searched,
    sql=("memex.search",),
    access="read",
    domain="memories",
    embeds="query",
    rest=Route("POST", "/v1/memories/search", "Ranked results"),
    tool=Tool(
        "search_memories",
        "Search memories",
        "Recall the tenant's memories most relevant to `query`, best first, from any point"
        " in the past; of two equally relevant memories the newer comes first. Each result"
        " carries its score and the parts of it: score = relevance * (1 + 0.25 * recency) *"
        " importance, or (alpha * relevance + (1 - alpha) * recency) * importance when alpha"
        " is given.",
        read_only=True,
    ),
    replica=True,
)

COUNT = Operation(
    name="count",
    summary="Count a tenant's live memories",
    request=CountQuery,
    run=count,
    response=CountResponse,
    answer=_counted,
    sql=("memex.count",),
    access="read",
    domain="memories",
    rest=Route("GET", "/v1/memories/count", "Count", source="query"),
    tool=Tool(
        "count_memories",
        "Count memories",
        "Count the tenant's live memories (optionally of one type, and only those whose"
        " metadata contains the given object).",
        read_only=True,
    ),
    replica=True,
)

FORGET = Operation(
    name="forget",
    summary="Delete one memory of the tenant (or, without user_id, of the agent)",
    request=MemoryForget,
    run=forget,
    sql=("memex.forget",),
    access="write",
    domain="memories",
    rest=Route(
        "DELETE",
        "/v1/memories/{memory_id:uuid}",
        "Deleted",
        status=204,
        source="query",
        wire=ForgetQuery,
        errors=(
            Reply(404, "No such memory for this tenant (or an id that is not a UUID)"),
            _IS_A_FILE,
        ),
        no_body=True,
    ),
    tool=Tool(
        "delete_memory",
        "Delete a memory",
        "Forget one memory of the tenant by its id (without user_id: of whichever user of"
        " the agent it is). Fails if the id is not one of this tenant's memories.",
        destructive=True,
        renames=_ID,
        response=Deleted,
        answer=lambda _, memory: Deleted(deleted=MemoryOut.model_validate(memory)),
    ),
)

LIST = Operation(
    name="list_memories",
    summary="List a tenant's live memories, newest first, a page at a time",
    request=ListQuery,
    run=list_memories,
    response=MemoryPage,
    answer=_page,
    sql=("memex.list_memories",),
    access="read",
    domain="memories",
    pages=Paging("cursor", "next_cursor"),
    rest=Route(
        "GET",
        "/v1/memories",
        "A page of memories and the cursor of the next one",
        source="query",
    ),
    tool=Tool(
        "list_memories",
        "List memories",
        "List the tenant's memories, newest first, a page at a time (to review them, not"
        " to answer a question: search_memories ranks by relevance). Pass next_cursor as"
        " cursor for the next page; it is null on the last page.",
        read_only=True,
    ),
    replica=True,
)

GET = Operation(
    name="get",
    summary="Get one memory of the tenant",
    request=MemoryRef,
    run=get,
    response=MemoryOut,
    sql=("memex.get_memory",),
    access="read",
    domain="memories",
    rest=Route(
        "GET",
        "/v1/memories/{memory_id:uuid}",
        "The memory",
        source="query",
        wire=MemoryReadQuery,
        errors=(_NOT_FOUND,),
    ),
    tool=Tool(
        "get_memory",
        "Get a memory",
        "Read one memory of the tenant by its id (with as_of: as it was at that moment)."
        " Fails if the id is not one of this tenant's memories.",
        read_only=True,
        renames=_ID,
    ),
    replica=True,
)

UPDATE = Operation(
    name="update",
    summary="Change fields of one memory of the tenant (a new content is embedded again)",
    request=MemoryUpdate,
    run=update,
    response=MemoryOut,
    sql=("memex.update_memory",),
    access="write",
    domain="memories",
    embeds="content",
    rest=Route(
        "PATCH",
        "/v1/memories/{memory_id:uuid}",
        "The memory as changed",
        wire=MemoryPatch,
        errors=(_NOT_FOUND, _IS_A_FILE),
    ),
    tool=Tool(
        "update_memory",
        "Update a memory",
        "Correct one memory of the tenant by its id: give only the fields to change"
        " (content, importance, metadata, memory_type, expires_at, supersedes, valid_from,"
        " valid_to; at least one). A new content replaces the old text and is searched by"
        " its new meaning; metadata replaces the whole object. Every change leaves a"
        " revision (memory_history; revert_memory undoes one). To record that a fact"
        " changed, prefer store_memory with `supersedes` (the old version stays in the"
        " history); `supersedes` here names older memories this one replaces; `valid_from`"
        " / `valid_to` say when the fact held. Returns the memory as changed.",
        destructive=True,
        idempotent=True,
        renames=_ID,
    ),
)

ERASE_PATH = "/v1/users/erase"

ERASE_USER = Operation(
    name="erase_user",
    summary="Erase a user: delete every row of the tenant in every table (admin; confirm"
    " repeats user_id)",
    request=EraseUserRequest,
    run=erase_user,
    response=ErasedResponse,
    answer=lambda request, deleted: ErasedResponse(
        **request.model_dump(include={"agent_id", "user_id"}), deleted=deleted
    ),
    sql=("memex.erase_user",),
    access="admin",
    domain="memories",
    # Its own path, reached by no other operation's path without an id: never
    # DELETE /v1/memories (DELETE /v1/memories/{id} less its id), and a POST whose body
    # names the user twice. Not an MCP tool: a model is never asked to erase a person.
    rest=Route(
        "POST",
        ERASE_PATH,
        "Rows deleted per table",
        errors=(
            Reply(
                422, "`confirm` does not repeat user_id (or another invalid field)", ErrorResponse
            ),
        ),
    ),
)


async def export_page(
    session: Session, query: ExportPageQuery
) -> tuple[list[ExportRow], ExportCursor]:
    """One page of an export (AsyncMemex.export_page) and the `after` of the next page
    (None: this was the last)."""
    validated(TenantQuery, agent_id=query.agent_id, user_id=query.user_id or "-")
    rows: list[ExportRow] = await session.fetch(
        ExportRow,
        sql.EXPORT_MEMORIES,
        {
            "agent_id": query.agent_id,
            "user_id": query.user_id,
            "include_embeddings": query.embeddings,
            **after_params(query.after, "after_user_id", "after_created_at", "after_id"),
            "limit": query.limit,
        },
    )
    return rows, next_key(rows, query.limit, lambda row: (row.user_id, row.created_at, row.id))


EXPORT_PAGE = Operation(
    name="export_page",
    summary="One page of an export of an agent's user's (or all its users') memories",
    request=ExportPageQuery,
    run=export_page,
    sql=("memex.export_memories",),
    access="read",
    domain="memories",
)

# where the next page of an export's history starts: (kind, user_id, id) of the last row
# (file revisions and access entries are numbered per user: memex.export_history)
HistoryCursor = tuple[str, str, int] | None


async def export_history(
    session: Session, query: HistoryPageQuery
) -> tuple[list[HistoryRow], HistoryCursor]:
    """One page of memex.export_history and the cursor of the next (None: the last)."""
    rows: list[HistoryRow] = await session.fetch(
        HistoryRow,
        sql.EXPORT_HISTORY,
        {
            "agent_id": query.agent_id,
            "user_id": query.user_id,
            **after_params(query.after, "after_kind", "after_user_id", "after_id"),
            "limit": query.limit,
            "include_memory_revisions": query.memory_revisions,
        },
    )
    return rows, next_key(rows, query.limit, lambda row: (row.kind, row.record["user_id"], row.id))


async def missing_memory_ids(session: Session, query: MemoryIds) -> list[UUID]:
    return await session.fetch(None, sql.MISSING_MEMORY_IDS, query.model_dump())


# each kind of history record to the SQL function that imports it (and authorizes it)
_IMPORT_HISTORY = {
    "file_revision": files_sql.IMPORT_FILE_REVISIONS,
    "access": files_sql.IMPORT_ACCESS_LOG,
    "consolidation_run": consolidation_sql.IMPORT_CONSOLIDATION_RUNS,
    "memory_revision": sql.IMPORT_MEMORY_REVISIONS,
}


async def import_history(session: Session, batch: HistoryImport) -> tuple[int, int]:
    """The number of the batch's records imported (those recorded already are skipped),
    and of its access-log entries, those older than the retention window (the next
    maintenance prunes them, as it prunes live ones)."""
    found = await session.fetch(
        None, _IMPORT_HISTORY[batch.kind], {"records": Jsonb(batch.records)}
    )
    expiring = 0
    if batch.kind == "access":
        ats = [record["at"] for record in batch.records]
        expiring = int((await session.fetch(None, files_sql.ACCESS_LOG_EXPIRING, {"ats": ats}))[0])
    return int(found[0]), expiring


async def import_memory_batch(session: Session, batch: MemoryImport) -> tuple[int, int]:
    """Insert new memories keeping their ids, timestamps and lineage: the number inserted
    and, of those, the number embedded again (no vector, or another model's)."""
    memories = batch.memories
    stale = [
        i
        for i, m in enumerate(memories)
        if m.embedding is None or m.embedding_model != session.model_id
    ]
    vectors = [np.asarray(m.embedding or (), dtype=np.float32) for m in memories]
    reservation = None
    if stale:  # the batch's budget is paid before anything is embedded
        reservation = await session.reserve("store", [(m.agent_id, m.user_id) for m in memories])
        fresh = await session.embedder.embed_many([memories[i].content for i in stale])
        for i, vector in zip(stale, fresh, strict=True):
            vectors[i] = vector
    rows: list[Memory] = await session.fetch(
        Memory,
        sql.IMPORT_MEMORIES,
        {
            **store_params(memories, vectors, session.model_id),
            "ids": [m.id for m in memories],
            "updated_at": [m.updated_at for m in memories],
            "lineage": [jsonb_or_none(m.lineage()) for m in memories],
            "paths": [m.path for m in memories],
            "actors": [m.actor for m in memories],
            "access": "admin",
        },
        reservation=reservation,
    )
    metrics.count_by_type(metrics.MEMORIES_STORED, rows)
    # embedded again: the inserted ones only. An id another tenant holds is skipped by
    # memex.import_memories (ids are one namespace) after it was embedded, since
    # memex.missing_memory_ids cannot see it: counted as the caller's own existing id
    # is, skipped and not embedded, so the answer does not tell them apart.
    inserted = {row.id for row in rows}
    return len(rows), sum(1 for i in stale if memories[i].id in inserted)


EXPORT_HISTORY = Operation(
    name="export_history",
    summary="One page of an export's history: file revisions, access log, runs, memory revisions",
    request=HistoryPageQuery,
    run=export_history,
    sql=("memex.export_history",),
    access="read",
    domain="memories",
)

MISSING_MEMORY_IDS = Operation(
    name="missing_memory_ids",
    summary="Which of these memory ids no memory has yet (an import skips the others)",
    request=MemoryIds,
    run=missing_memory_ids,
    sql=("memex.missing_memory_ids",),
    access="read",
    domain="memories",
)

IMPORT_HISTORY = Operation(
    name="import_history",
    summary="Import one batch of history records of one kind (admin of each tenant)",
    request=HistoryImport,
    run=import_history,
    sql=(
        "memex.import_file_revisions",
        "memex.import_access_log",
        "memex.import_consolidation_runs",
        "memex.import_memory_revisions",
    ),
    access="admin",
    domain="memories",
)

IMPORT_MEMORY_BATCH = Operation(
    name="import_memory_batch",
    summary="Import one batch of new memories keeping their ids and history",
    request=MemoryImport,
    run=import_memory_batch,
    sql=("memex.import_memories",),
    access="write",
    domain="memories",
    embeds="(the memories without a vector of the caller's model)",
)

HISTORY = Operation(
    name="memory_history",
    summary="List the revisions of one memory, newest first (every change leaves one)",
    request=MemoryHistory,
    run=memory_history,
    response=MemoryRevisionList,
    answer=_history,
    sql=("memex.list_memory_revisions",),
    access="read",
    domain="memories",
    pages=Paging("before", "next_before"),
    rest=Route(
        "GET",
        "/v1/memories/{memory_id:uuid}/revisions",
        "A page of revisions, each a full snapshot",
        source="query",
        wire=MemoryHistoryQuery,
        errors=(_NOT_FOUND,),
    ),
    tool=Tool(
        "memory_history",
        "Memory history",
        "List the revisions of one memory of the tenant, newest first: what it said after"
        " each change (store, update, supersede, superseded, archive, restore, revert),"
        " which fields changed, who and when. To read it as it was at a moment, use"
        " get_memory with as_of.",
        read_only=True,
        renames=_ID,
    ),
)

REVISION_DIFF = Operation(
    name="memory_revision_diff",
    summary="What changed in one memory from one revision to another",
    request=MemoryDiff,
    run=memory_revision_diff,
    response=MemoryDiffOut,
    answer=_diffed,
    sql=("memex.diff_memory_revisions",),
    access="read",
    domain="memories",
    rest=Route(
        "GET",
        "/v1/memories/{memory_id:uuid}/revisions/diff",
        "A unified diff of the content and the other fields that differ",
        source="query",
        wire=MemoryDiffQuery,
        errors=(_NOT_FOUND,),
    ),
    tool=Tool(
        "diff_memory",
        "Diff two revisions of a memory",
        "Show what changed in one memory of the tenant between two of its revisions"
        " (numbers from memory_history): a unified diff of the content and the other"
        " fields that differ (importance, metadata, validity, supersession, archive).",
        read_only=True,
        renames=_ID,
    ),
)

REVERT = Operation(
    name="revert_memory",
    summary="Make what a memory said at an earlier revision current again (a new revision)",
    request=MemoryRevert,
    run=revert_memory,
    response=MemoryOut,
    sql=("memex.revert_memory",),
    access="write",
    domain="memories",
    rest=Route(
        "POST",
        "/v1/memories/{memory_id:uuid}/revert",
        "The memory as reverted",
        wire=MemoryRevertBody,
        errors=(
            _NOT_FOUND,
            Reply(
                409,
                "The memory is a file (POST /v1/files/restore), or says that already",
                ErrorResponse,
            ),
        ),
    ),
    tool=Tool(
        "revert_memory",
        "Revert a memory",
        "Make what one memory of the tenant said at an earlier revision (a number from"
        " memory_history) current again: content, type, importance, metadata, expiry and"
        " validity. Nothing is lost: the revert is a new revision, and the history keeps"
        " every earlier one. Returns the memory as reverted.",
        destructive=True,
        renames=_ID,
    ),
)


async def retire(session: Session, request: MemoryRetire) -> list[Memory]:
    rows: list[Memory] = await session.fetch(
        Memory,
        sql.RETIRE_MEMORIES,
        request.model_dump(include={"agent_id", "user_id", "ids", "reason"}),
    )
    return rows


# memory_memorize's "retire" decision (memexdb.agentic.memorizing runs it; no REST route
# or MCP tool of its own yet, so it is not in OPERATIONS)
RETIRE = Operation(
    name="retire",
    summary="Retire memories that no longer hold (superseded with no successor)",
    request=MemoryRetire,
    run=retire,
    response=None,
    answer=lambda _, __: None,
    sql=("memex.retire_memories",),
    access="write",
    domain="memories",
)


@dataclass(frozen=True, slots=True)
class CheckedFact:
    """memex.check_memorize_fact's row: the decision normalized, or why it is refused."""

    action: Literal["add", "supersede", "retire", "none"] | None
    fact: str | None
    ids: list[UUID] | None
    reason: str | None
    refusal: str | None


# memory_memorize's rules for one memory_fact decision (memexdb.agentic.memorizing runs
# it; so does the TypeScript direct client, the same SQL): no route or tool of its own
CHECK_MEMORIZE_FACT = Operation(
    name="check_memorize_fact",
    summary="Check one memorize decision against its rules and the call's candidates",
    request=FactCheck,
    run=fetch_first(CheckedFact, sql.CHECK_MEMORIZE_FACT),
    response=None,
    answer=lambda _, __: None,
    sql=("memex.check_memorize_fact",),
    access="write",
    domain="memories",
)

OPERATIONS: tuple[Operation[Any, Any], ...] = (
    STORE,
    STORE_MANY,
    PUT_MEMORIES,
    GET_MEMORIES,
    REFRESH_MEMORIES,
    SEARCH,
    FORGET,
    COUNT,
    GET,
    UPDATE,
    LIST,
    HISTORY,
    REVISION_DIFF,
    REVERT,
    ERASE_USER,
    EXPORT_PAGE,  # the Python API's (GET /v1/export streams pages of it)
    # export and import's own (memexdb.moving runs them, page after page, batch by batch)
    EXPORT_HISTORY,
    MISSING_MEMORY_IDS,
    IMPORT_HISTORY,
    IMPORT_MEMORY_BATCH,
)
