"""POST /v1/import: an export (JSON Lines, memexdb.export_format) streamed in the request
body, imported as the caller. Hand-written, like GET /v1/export, because its body is a
stream of lines, not one JSON document: the operation table's routes validate one body
into one request model before running. The body is spooled to a temporary file first,
every line counted and parsed, so that a body over the limits (413) or with a line that
is not a JSON object (422) applies nothing; then the lines are inserted a batch at a
time, so that an export of any size moves in bounded memory."""

from __future__ import annotations

import json
import tempfile
from collections.abc import AsyncIterator
from typing import IO, Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from memexdb import export_format
from memexdb.errors import InvalidArgument
from memexdb.export_format import IMPORT_LINES_MAX, LINE_MAX_BYTES, ImportResponse
from memexdb.moving import check_record, line_error
from memexdb.rest.parsing import json_of, memex_of

MEDIA_TYPES = ("application/x-ndjson", "application/jsonl")
SPOOL_MEMORY_BYTES = 8 * 1024 * 1024  # a bigger body is spooled to a temporary file


def _record(number: int, line: bytes) -> dict[str, Any]:
    if not line.strip():
        raise InvalidArgument(f"line {number}", "is empty (one JSON object per line)")
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        raise InvalidArgument(f"line {number}", "is not JSON (UTF-8)") from None
    if not isinstance(record, dict):
        raise InvalidArgument(f"line {number}", "is not a JSON object")
    return record


async def spool(request: Request, lines_max: int) -> IO[bytes]:
    """The whole body in a temporary file (in memory up to SPOOL_MEMORY_BYTES, on disk
    beyond), every line checked before anything is applied: at most LINE_MAX_BYTES each,
    at most `lines_max` of them, each a JSON object (413 or 422 naming the line
    otherwise). So a refused import has applied nothing."""
    body = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY_BYTES)  # noqa: SIM115
    try:
        pending = b""
        number = 0
        async for chunk in request.stream():
            *complete, pending = (pending + chunk).split(b"\n")
            for line in complete:
                number += 1
                _check(number, line, lines_max)
                body.write(line + b"\n")
            if len(pending) > LINE_MAX_BYTES:
                raise HTTPException(413, f"line {number + 1} is longer than {LINE_MAX_BYTES} bytes")
        if pending.strip():  # the last line, without its newline
            number += 1
            _check(number, pending, lines_max)
            body.write(pending + b"\n")
        body.seek(0)
        return body
    except BaseException:
        body.close()
        raise


def _check(number: int, line: bytes, lines_max: int) -> None:
    if number > lines_max:
        raise HTTPException(413, f"more than {lines_max} lines: split the import")
    if len(line) > LINE_MAX_BYTES:
        raise HTTPException(413, f"line {number} is longer than {LINE_MAX_BYTES} bytes")
    check_record(number - 1, _record(number, line))  # record n is line n + 1


async def records(body: IO[bytes]) -> AsyncIterator[dict[str, Any]]:
    """The spooled body's lines (memexdb.rest.importing.spool checked them) as objects."""
    for number, line in enumerate(body, start=1):
        yield _record(number, line.rstrip(b"\n"))


async def import_records(request: Request) -> Response:
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    memex = memex_of(request)
    # the key first (the operator's, or an admin key: moving history is an admin's), so
    # that a caller without one learns nothing about its input
    await memex.authenticate(admin=True)
    if media_type not in MEDIA_TYPES:
        raise HTTPException(415, f"send the export as {MEDIA_TYPES[0]} (JSON Lines)")
    lines_max: int = getattr(request.app.state, "import_lines_max", IMPORT_LINES_MAX)
    try:
        with await spool(request, lines_max) as body:
            result = await memex.import_memories(records(body))
    except InvalidArgument as exc:
        raise line_error(exc) from None
    return json_of(
        ImportResponse(
            imported=result.imported,
            skipped=result.skipped,
            reembedded=result.reembedded,
            kinds=result.kinds,
            access_log_expiring=result.access_log_expiring,
        )
    )


EXAMPLE = (
    "\n".join(
        json.dumps(line)
        for line in (
            {
                "record": "header",
                "format": export_format.FORMAT,
                "version": export_format.VERSION,
                "agent_id": "support-bot",
                "user_id": "alice",
                "exported_at": "2026-12-05T06:00:00Z",
            },
            {
                "record": "memory",
                "id": "3f2c1a9e-8d4b-4f6a-9c1e-2b7d5a8e0f13",
                "agent_id": "support-bot",
                "user_id": "alice",
                "content": "Alice prefers email.",
            },
        )
    )
    + "\n"
)
