"""The file operations (MemexAI's raw tools): write, read, list, patch, delete, the
revisions of a file (list, get, diff, restore), smart_read and the access log.

A file is a memory with a virtual path (user/profile.md), kept with every revision and an
access log; paths travel in the query string or body, never in the URL path. Each
operation is a function of a Session and its validated request (embed at most one text,
call one memex.* function) and its declaration (memexdb.operation), from which the
Python methods, the REST endpoints and the MCP tools are built.
"""

from __future__ import annotations

import asyncio
import random
import weakref
from dataclasses import dataclass
from time import monotonic
from uuid import UUID

from memexdb import metrics
from memexdb.error_models import ErrorResponse
from memexdb.errors import Conflict
from memexdb.files import sql
from memexdb.files.models import (
    AccessEventOut,
    AccessLog,
    AccessLogQuery,
    DiffOut,
    DiffQuery,
    FileCheck,
    FileDeleteQuery,
    FileEntryOut,
    FileList,
    FileListQuery,
    FileOut,
    FilePatch,
    FileReadQuery,
    FileWrite,
    PassageSearchRequest,
    RestoreRequest,
    RevisionList,
    RevisionListQuery,
    RevisionOut,
    RevisionQuery,
    SmartReadOut,
    SmartReadRequest,
)
from memexdb.operation import Operation, Paging, Reply, Route, Tool, fetch_first, fetch_rows
from memexdb.paging import next_key
from memexdb.session import Session
from memexdb.types import (
    AccessEvent,
    File,
    FileEntry,
    FileRevision,
    Passage,
    PatchPreview,
    SmartRead,
)

# An unconditional patch (no base_revision) that loses a race is tried again: at most
# this many tries, within this many seconds (then Conflict), each after a random pause
# of up to 10 ms x 2^try (at most 250 ms), so that concurrent appends to one file spread.
UNCONDITIONAL_PATCH_TRIES = 40
UNCONDITIONAL_PATCH_SECONDS = 15.0

# The unconditional patches of one file that lost a race take turns in this process: one
# previews, embeds and writes while the others wait, instead of all trying again at once,
# when again only one can win (n concurrent appends cost ~n^2/2 tries and embeddings that
# way, ~2n this way; under load the n^2 ran out of UNCONDITIONAL_PATCH_SECONDS). First
# tries do not wait: an uncontended patch costs what it did.
_RETRY_TURNS: weakref.WeakValueDictionary[tuple[str, str, str], asyncio.Lock] = (
    weakref.WeakValueDictionary()
)


def _retry_turn(agent_id: str, user_id: str, path: str) -> asyncio.Lock:
    key = (agent_id, user_id, path)
    turn = _RETRY_TURNS.get(key)
    if turn is None:
        turn = _RETRY_TURNS[key] = asyncio.Lock()
    return turn


async def write_file(session: Session, request: FileWrite) -> File:
    reservation = await session.reserve("store", [(request.agent_id, request.user_id)])
    embedding = await session.embedder.embed_one(request.content)
    values = {**request.model_dump(), "embedding": embedding, "embedding_model": session.model_id}
    rows: list[File] = await session.fetch(File, sql.WRITE_FILE, values, reservation=reservation)
    metrics.FILE_WRITES.labels("write").inc()
    return rows[0]


read_file = fetch_first(File, sql.READ_FILE)


async def list_files(session: Session, query: FileListQuery) -> tuple[list[FileEntry], str | None]:
    rows: list[FileEntry] = await session.fetch(FileEntry, sql.LIST_FILES, query.model_dump())
    return rows, next_key(rows, query.limit, lambda row: row.path)


async def patch_file(session: Session, request: FilePatch) -> File:
    """A patch without `base_revision` applies to whatever the file holds when it lands:
    one that finds the file moved on between its preview and its write is previewed,
    embedded and tried again, taking turns with this process's other patches of the file
    that lost (`_retry_turn`) and after a random pause when it loses again (to another
    process's write), up to UNCONDITIONAL_PATCH_TRIES times within
    UNCONDITIONAL_PATCH_SECONDS, so concurrent appends all land."""
    deadline = monotonic() + UNCONDITIONAL_PATCH_SECONDS
    # paid once, before any embedding; a try that loses its race is rolled back with
    # its use of the reservation, so the next try spends it
    reservation = await session.reserve("store", [(request.agent_id, request.user_id)])
    try:
        return await _patch_once(session, request, reservation)
    except Conflict as lost:
        if request.base_revision is not None:
            raise
        last = lost
    turn = _retry_turn(request.agent_id, request.user_id, request.path)
    try:
        async with asyncio.timeout(max(0.0, deadline - monotonic())):
            await turn.acquire()
    except TimeoutError:
        raise last from None
    try:
        for attempt in range(1, UNCONDITIONAL_PATCH_TRIES):
            try:
                return await _patch_once(session, request, reservation)
            except Conflict:
                if attempt == UNCONDITIONAL_PATCH_TRIES - 1 or monotonic() >= deadline:
                    raise
            pause = min(0.25, 0.01 * 2**attempt)
            await asyncio.sleep(random.uniform(0, pause))  # noqa: S311 (jitter, not a secret)
    finally:
        turn.release()
    raise AssertionError("unreachable")


async def _patch_once(session: Session, request: FilePatch, reservation: UUID | None) -> File:
    """Preview the patch on the file as it is, embed the result and write it, based on
    the revision previewed (or on the caller's base_revision): Conflict if it moved on."""
    values = request.model_dump()
    preview_values = {k: v for k, v in values.items() if k != "base_revision"}
    previews: list[PatchPreview] = await session.fetch(
        PatchPreview, sql.PREVIEW_PATCH, preview_values
    )
    preview = previews[0]
    embedding = await session.embedder.embed_one(preview.content)
    base = request.base_revision if request.base_revision is not None else preview.revision
    rows: list[File] = await session.fetch(
        File,
        sql.PATCH_FILE,
        {
            **values,
            "base_revision": base,
            "embedding": embedding,
            "embedding_model": session.model_id,
        },
        reservation=reservation,
    )
    metrics.FILE_WRITES.labels("patch").inc()
    return rows[0]


async def delete_file(session: Session, query: FileDeleteQuery) -> File:
    rows: list[File] = await session.fetch(File, sql.DELETE_FILE, query.model_dump())
    metrics.FILE_WRITES.labels("delete").inc()
    return rows[0]


list_revisions = fetch_rows(FileRevision, sql.LIST_REVISIONS)
get_revision = fetch_first(FileRevision, sql.GET_REVISION)


async def diff_revisions(session: Session, query: DiffQuery) -> str:
    rows = await session.fetch(None, sql.DIFF_REVISIONS, query.model_dump())
    return str(rows[0])


async def restore_revision(session: Session, request: RestoreRequest) -> File:
    which = RevisionQuery.model_construct(
        **request.model_dump(include={"agent_id", "user_id", "path", "revision"})
    )
    old = await get_revision(session, which)
    reservation = await session.reserve("store", [(request.agent_id, request.user_id)])
    embedding = await session.embedder.embed_one(old.content) if old.content else None
    values = {**request.model_dump(), "embedding": embedding, "embedding_model": session.model_id}
    rows: list[File] = await session.fetch(
        File, sql.RESTORE_REVISION, values, reservation=reservation
    )
    metrics.FILE_WRITES.labels("restore").inc()
    return rows[0]


async def smart_read(session: Session, request: SmartReadRequest) -> SmartRead:
    # paid for before the query is embedded: a caller over its limit embeds nothing
    reservation = await session.reserve("search", [(request.agent_id, request.user_id)])
    embedding = await session.embedder.embed_one(request.query)
    values = {
        **request.model_dump(),
        "query_embedding": embedding,
        "embedding_model": session.model_id,
    }
    rows: list[SmartRead] = await session.fetch(
        SmartRead, sql.SMART_READ, values, reservation=reservation
    )
    return rows[0]


access_log = fetch_rows(AccessEvent, sql.ACCESS_EVENTS)


def _files(_: FileListQuery, page: tuple[list[FileEntry], str | None]) -> FileList:
    files, after = page
    return FileList(files=[FileEntryOut.model_validate(f) for f in files], next_after=after)


def _revisions(query: RevisionListQuery, rows: list[FileRevision]) -> RevisionList:
    return RevisionList(
        revisions=[RevisionOut.model_validate(r) for r in rows],
        next_before=next_key(rows, query.limit, lambda row: row.revision),
    )


def _diff(query: DiffQuery, diff: str) -> DiffOut:
    return DiffOut(
        path=query.path,
        from_revision=query.from_revision,
        to_revision=query.to_revision,
        diff=diff,
    )


def _log(query: AccessLogQuery, events: list[AccessEvent]) -> AccessLog:
    return AccessLog(
        events=[AccessEventOut.model_validate(e) for e in events],
        next_before=next_key(events, query.limit, lambda event: event.id),
    )


_NO_FILE = Reply(404, "No such file (or revision) for this tenant", ErrorResponse)
_MOVED_ON = Reply(409, "The file moved past base_revision: read it again", ErrorResponse)
_NEW_REVISION = "The file at its new revision"

# (declared in the table's order: the MCP tools' (tools/list) and the REST endpoints'
# paths'; PASSAGES last, the Python API's, as memory_search is memexdb.agentic's)
LIST = Operation(
    name="list_files",
    summary="List a tenant's files under a path prefix, in path order (memory_list)",
    request=FileListQuery,
    run=list_files,
    response=FileList,
    answer=_files,
    sql=("memex.list_files",),
    access="read",
    domain="files",
    pages=Paging("after", "next_after"),
    rest=Route(
        "GET", "/v1/files", "A page of files and the `after` of the next one", source="query"
    ),
    tool=Tool(
        "memory_list",
        "List files",
        "List the tenant's memory files (user/... and agent/...) under `prefix`, in path"
        " order, with their size in characters, revision and last update. Pass next_after"
        " as `after` for the next page (null: the last page).",
        read_only=True,
    ),
)

READ = Operation(
    name="read_file",
    summary="Read a file: whole, a line range, or as of a time (memory_read)",
    request=FileReadQuery,
    run=read_file,
    response=FileOut,
    sql=("memex.read_file",),
    access="read",
    domain="files",
    rest=Route("GET", "/v1/files/read", "The file", source="query", errors=(_NO_FILE,)),
    tool=Tool(
        "memory_read",
        "Read a file",
        "Read a memory file by its virtual path (e.g. user/profile.md): the whole file, or"
        " lines from_line..to_line; `revision` in the result is what memory_write and"
        " memory_patch take as base_revision.",
        read_only=True,
    ),
)

WRITE = Operation(
    name="write_file",
    summary="Create or overwrite a file (memory_write)",
    request=FileWrite,
    run=write_file,
    response=FileOut,
    sql=("memex.write_file",),
    access="write",
    domain="files",
    embeds="content",
    rest=Route("PUT", "/v1/files", _NEW_REVISION, errors=(_MOVED_ON,)),
    tool=Tool(
        "memory_write",
        "Write a file",
        "Create or overwrite a memory file (markdown is a good fit): user/... for what"
        " concerns the user, agent/... for your own notes. Every write keeps a revision."
        " Pass the revision you read as base_revision (0 for a new file) to be refused if"
        " the file changed meanwhile.",
        destructive=True,
    ),
)

PATCH = Operation(
    name="patch_file",
    summary="Append under a heading or replace one exact text of a file (memory_patch)",
    request=FilePatch,
    run=patch_file,
    response=FileOut,
    sql=("memex.patch_file",),
    access="write",
    domain="files",
    embeds="(the patched file)",
    rest=Route("PATCH", "/v1/files", _NEW_REVISION, errors=(_NO_FILE, _MOVED_ON)),
    tool=Tool(
        "memory_patch",
        "Patch a file",
        "Change part of a memory file. Either `append` text under a markdown `heading`"
        ' (e.g. "## Preferences"; the heading is added if absent, and the file created if'
        " it does not exist), or replace `old_text` (which must occur exactly once) with"
        " `new_text`. Nothing is written if the patch cannot apply.",
        destructive=True,
        omit_null=frozenset({"heading", "append", "old_text", "new_text"}),
    ),
)

DELETE = Operation(
    name="delete_file",
    summary="Delete a file, keeping its revisions (memory_delete)",
    request=FileDeleteQuery,
    run=delete_file,
    response=FileOut,
    sql=("memex.delete_file",),
    access="write",
    domain="files",
    rest=Route(
        "DELETE",
        "/v1/files",
        "The file as it was; `revision` is the delete's",
        source="query",
        errors=(_NO_FILE, _MOVED_ON),
    ),
    tool=Tool(
        "memory_delete",
        "Delete a file",
        "Delete a memory file. Its revisions are kept: memory_restore brings it back.",
        destructive=True,
    ),
)

SMART_READ = Operation(
    name="smart_read",
    summary="One context block, never over budget, from the most relevant files and memories"
    " (memory_smart_read)",
    request=SmartReadRequest,
    run=smart_read,
    response=SmartReadOut,
    sql=("memex.smart_read",),
    access="read",
    domain="files",
    embeds="query",
    rest=Route("POST", "/v1/files/smart-read", "The block and its sources"),
    tool=Tool(
        "memory_smart_read",
        "Smart read",
        "Build one context block of at most `budget` characters from the files and"
        " memories most relevant to `query`, best first, each under a header with its path"
        " (### user/profile.md) or id (### memory <id>). Use it before answering.",
        read_only=True,
    ),
)

REVISIONS = Operation(
    name="list_revisions",
    summary="List the revisions of a file, newest first (memory_revisions)",
    request=RevisionListQuery,
    run=list_revisions,
    response=RevisionList,
    answer=_revisions,
    sql=("memex.list_revisions",),
    access="read",
    domain="files",
    pages=Paging("before", "next_before"),
    rest=Route("GET", "/v1/files/revisions", "A page of revisions without content", source="query"),
    tool=Tool(
        "memory_revisions",
        "File revisions",
        "List the revisions of a memory file, newest first (who, when, which operation,"
        " size); memory_diff compares two, memory_restore brings one back.",
        read_only=True,
    ),
)

REVISION = Operation(
    name="get_revision",
    summary="Read one revision of a file with its content",
    request=RevisionQuery,
    run=get_revision,
    response=RevisionOut,
    sql=("memex.get_revision",),
    access="read",
    domain="files",
    rest=Route("GET", "/v1/files/revision", "The revision", source="query", errors=(_NO_FILE,)),
)

DIFF = Operation(
    name="diff_revisions",
    summary="Unified diff between two revisions of a file (memory_diff)",
    request=DiffQuery,
    run=diff_revisions,
    response=DiffOut,
    answer=_diff,
    sql=("memex.diff_revisions",),
    access="read",
    domain="files",
    rest=Route("GET", "/v1/files/diff", "The diff", source="query", errors=(_NO_FILE,)),
    tool=Tool(
        "memory_diff",
        "Diff revisions",
        "A unified diff of a memory file from one revision to another.",
        read_only=True,
    ),
)

RESTORE = Operation(
    name="restore_revision",
    summary="Make an earlier revision current again, as a new revision (memory_restore)",
    request=RestoreRequest,
    run=restore_revision,
    response=FileOut,
    sql=("memex.restore_revision",),
    access="write",
    domain="files",
    embeds="(the restored revision)",
    rest=Route("POST", "/v1/files/restore", _NEW_REVISION, errors=(_NO_FILE, _MOVED_ON)),
    tool=Tool(
        "memory_restore",
        "Restore a revision",
        "Make an earlier revision of a memory file current again (a new revision; also"
        " undoes a delete).",
        destructive=True,
    ),
)

ACCESS_LOG = Operation(
    name="access_log",
    summary="A tenant's access log (every read and write of its files), newest first",
    request=AccessLogQuery,
    run=access_log,
    response=AccessLog,
    answer=_log,
    sql=("memex.access_events",),
    access="read",
    domain="files",
    pages=Paging("before", "next_before"),
    rest=Route("GET", "/v1/access-log", "A page of entries", source="query"),
)


async def ranked_passages(session: Session, request: PassageSearchRequest) -> list[Passage]:
    """memex.search_passages for a validated request: files and memories ranked for its
    query (BM25 fused with vectors), each cut to a passage (a file's best paragraph, with
    its lines). One embedding, one statement: AsyncMemex.passages and memory_search
    (memexdb.agentic, which may add an LLM answer: `answer` is its) both run it."""
    # paid for before the query is embedded: a caller over its limit embeds nothing
    reservation = await session.reserve("search", [(request.agent_id, request.user_id)])
    values = {
        **request.model_dump(exclude={"answer"}),
        "query_embedding": await session.embedder.embed_one(request.query),
        "embedding_model": session.model_id,
    }
    rows: list[Passage] = await session.fetch(
        Passage, sql.SEARCH_PASSAGES, values, reservation=reservation
    )
    return rows


PASSAGES = Operation(
    name="passages",
    summary="Files and memories ranked for a query, each cut to a passage",
    request=PassageSearchRequest,
    run=ranked_passages,
    sql=("memex.search_passages",),
    access="read",
    domain="files",
    embeds="query",
)


@dataclass(frozen=True, slots=True)
class CheckedFile:
    """memex.check_memorize_file's row: the proposal's fields, or why it is refused."""

    tool: str | None
    path: str | None
    content: str | None
    heading: str | None
    append: str | None
    old_text: str | None
    new_text: str | None
    refusal: str | None


# memory_memorize's rules for one file proposal (memexdb.agentic.memorizing runs it; so
# does the TypeScript direct client, the same SQL): no route or tool of its own
CHECK_MEMORIZE_FILE = Operation(
    name="check_memorize_file",
    summary="Check one memorize file proposal (memory_write, memory_patch) against its rules",
    request=FileCheck,
    run=fetch_first(CheckedFile, sql.CHECK_MEMORIZE_FILE),
    response=None,
    answer=lambda _, __: None,
    sql=("memex.check_memorize_file",),
    access="write",
    domain="files",
)
