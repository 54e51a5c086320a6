"""File memory endpoints (MemexAI's raw tools): a file is a memory with a virtual path,
kept with every revision and an access log. Paths travel in the query string or body
(`path=user/profile.md`), never in the URL path."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from memexdb.files import operations as files
from memexdb.paging import next_key
from memexdb.params import (
    AccessEventOut,
    AccessLog,
    AccessLogQuery,
    DiffOut,
    DiffQuery,
    ErrorResponse,
    FileDeleteQuery,
    FileEntryOut,
    FileList,
    FileListQuery,
    FileOut,
    FilePatch,
    FileReadQuery,
    FileWrite,
    RestoreRequest,
    RevisionList,
    RevisionListQuery,
    RevisionOut,
    RevisionQuery,
    SmartReadOut,
    SmartReadRequest,
)
from memexdb.rest.endpoint import Endpoint, Reply
from memexdb.rest.parsing import body_of, json_of, memex_of, query_of


async def list_files(request: Request) -> Response:
    query = query_of(request, FileListQuery)
    files, after = await memex_of(request).list_files(**query.model_dump())
    return json_of(
        FileList(files=[FileEntryOut.model_validate(f) for f in files], next_after=after)
    )


async def read_file(request: Request) -> Response:
    query = query_of(request, FileReadQuery)
    return json_of(FileOut.model_validate(await memex_of(request).read_file(**query.model_dump())))


async def write_file(request: Request) -> Response:
    body = await body_of(request, FileWrite)
    return json_of(FileOut.model_validate(await memex_of(request).write_file(**body.model_dump())))


async def patch_file(request: Request) -> Response:
    body = await body_of(request, FilePatch)
    return json_of(FileOut.model_validate(await memex_of(request).run(files.PATCH, body)))


async def delete_file(request: Request) -> Response:
    query = query_of(request, FileDeleteQuery)
    return json_of(
        FileOut.model_validate(await memex_of(request).delete_file(**query.model_dump()))
    )


async def list_revisions(request: Request) -> Response:
    query = query_of(request, RevisionListQuery)
    rows = await memex_of(request).list_revisions(**query.model_dump())
    after = next_key(rows, query.limit, lambda row: row.revision)
    return json_of(
        RevisionList(revisions=[RevisionOut.model_validate(r) for r in rows], next_before=after)
    )


async def get_revision(request: Request) -> Response:
    query = query_of(request, RevisionQuery)
    row = await memex_of(request).get_revision(**query.model_dump())
    return json_of(RevisionOut.model_validate(row))


async def diff_revisions(request: Request) -> Response:
    query = query_of(request, DiffQuery)
    diff = await memex_of(request).diff_revisions(**query.model_dump())
    return json_of(
        DiffOut(
            path=query.path,
            from_revision=query.from_revision,
            to_revision=query.to_revision,
            diff=diff,
        )
    )


async def restore_revision(request: Request) -> Response:
    body = await body_of(request, RestoreRequest)
    restored = await memex_of(request).restore_revision(**body.model_dump())
    return json_of(FileOut.model_validate(restored))


async def smart_read(request: Request) -> Response:
    body = await body_of(request, SmartReadRequest)
    return json_of(
        SmartReadOut.model_validate(await memex_of(request).smart_read(**body.model_dump()))
    )


async def access_log(request: Request) -> Response:
    query = query_of(request, AccessLogQuery)
    events = await memex_of(request).access_log(**query.model_dump())
    after = next_key(events, query.limit, lambda event: event.id)
    return json_of(
        AccessLog(events=[AccessEventOut.model_validate(e) for e in events], next_before=after)
    )


_NO_FILE = Reply(404, "No such file (or revision) for this tenant", ErrorResponse)
_MOVED_ON = Reply(409, "The file moved past base_revision: read it again", ErrorResponse)

ENDPOINTS = (
    Endpoint(
        "GET",
        "/v1/files",
        list_files,
        "List a tenant's files under a path prefix, in path order (memory_list)",
        Reply(200, "A page of files and the `after` of the next one", FileList),
        query=FileListQuery,
    ),
    Endpoint(
        "PUT",
        "/v1/files",
        write_file,
        "Create or overwrite a file (memory_write)",
        Reply(200, "The file at its new revision", FileOut),
        body=FileWrite,
        errors=(_MOVED_ON,),
    ),
    Endpoint(
        "PATCH",
        "/v1/files",
        patch_file,
        "Append under a heading or replace one exact text of a file (memory_patch)",
        Reply(200, "The file at its new revision", FileOut),
        body=FilePatch,
        errors=(_NO_FILE, _MOVED_ON),
    ),
    Endpoint(
        "DELETE",
        "/v1/files",
        delete_file,
        "Delete a file, keeping its revisions (memory_delete)",
        Reply(200, "The file as it was; `revision` is the delete's", FileOut),
        query=FileDeleteQuery,
        errors=(_NO_FILE, _MOVED_ON),
    ),
    Endpoint(
        "GET",
        "/v1/files/read",
        read_file,
        "Read a file: whole, a line range, or as of a time (memory_read)",
        Reply(200, "The file", FileOut),
        query=FileReadQuery,
        errors=(_NO_FILE,),
    ),
    Endpoint(
        "GET",
        "/v1/files/revisions",
        list_revisions,
        "List the revisions of a file, newest first (memory_revisions)",
        Reply(200, "A page of revisions without content", RevisionList),
        query=RevisionListQuery,
    ),
    Endpoint(
        "GET",
        "/v1/files/revision",
        get_revision,
        "Read one revision of a file with its content",
        Reply(200, "The revision", RevisionOut),
        query=RevisionQuery,
        errors=(_NO_FILE,),
    ),
    Endpoint(
        "GET",
        "/v1/files/diff",
        diff_revisions,
        "Unified diff between two revisions of a file (memory_diff)",
        Reply(200, "The diff", DiffOut),
        query=DiffQuery,
        errors=(_NO_FILE,),
    ),
    Endpoint(
        "POST",
        "/v1/files/restore",
        restore_revision,
        "Make an earlier revision current again, as a new revision (memory_restore)",
        Reply(200, "The file at its new revision", FileOut),
        body=RestoreRequest,
        errors=(_NO_FILE, _MOVED_ON),
    ),
    Endpoint(
        "POST",
        "/v1/files/smart-read",
        smart_read,
        "One context block, never over budget, from the most relevant files and memories"
        " (memory_smart_read)",
        Reply(200, "The block and its sources", SmartReadOut),
        body=SmartReadRequest,
    ),
    Endpoint(
        "GET",
        "/v1/access-log",
        access_log,
        "A tenant's access log (every read and write of its files), newest first",
        Reply(200, "A page of entries", AccessLog),
        query=AccessLogQuery,
    ),
)
