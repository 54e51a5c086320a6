"""One place that turns errors into HTTP responses: typed JSON bodies, never internal
exception text."""

from __future__ import annotations

import json
import logging
import math
import re
from typing import Any

from memexdb_client.errors import BY_STATUS, INTERNAL, kind_of, render
from pydantic import ValidationError
from starlette.convertors import UUIDConvertor
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memexdb.bearer import BEARER_CHALLENGE
from memexdb.error_models import ErrorBody, ErrorResponse, FieldError, field_errors
from memexdb.errors import InvalidArgument, MemexError, RateLimited
from memexdb.rest.parsing import memex_of

log = logging.getLogger("memexdb.rest")


def error_response(
    status: int,
    code: str,
    message: str,
    fields: list[FieldError] | None = None,
    retry_after: float | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    body = ErrorResponse(
        error=ErrorBody(
            code=code, message=message, fields=fields or [], retry_after_seconds=retry_after
        )
    )
    headers = dict(headers or {})
    if retry_after:
        headers["Retry-After"] = str(max(1, math.ceil(retry_after)))
    return JSONResponse(body.model_dump(mode="json"), status_code=status, headers=headers)


async def _credentials_refused(request: Request) -> Response | None:
    """The answer to a request whose credentials are not valid (401), or cannot be checked
    now (503), checked as every call checks them (memex._enter, one round trip); None
    when they are valid."""
    try:
        await memex_of(request).authenticate()
    except MemexError as exc:
        return await on_memex_error(request, exc)
    return None


async def on_validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ValidationError)
    # Authenticate first: a caller without a valid key learns nothing about the input
    # (only on this error path: a valid request still costs one round trip).
    refused = await _credentials_refused(request)
    if refused is not None:
        return refused
    fields = field_errors(exc)
    return error_response(422, "invalid_argument", f"{len(fields)} invalid field(s)", fields)


def memex_error_response(exc: MemexError) -> JSONResponse:
    """The JSON answer of a typed error, as its row of the error table says (status,
    code, message, Retry-After); an error the table does not know is a logged 500."""
    kind = kind_of(exc)
    if kind is INTERNAL:
        log.error("unexpected memexdb error: %r", exc)
    fields = None
    if isinstance(exc, InvalidArgument):
        fields = [FieldError(field=exc.field, message=exc.message)]
    headers = {"WWW-Authenticate": BEARER_CHALLENGE} if kind.status == 401 else {}
    if kind.retry_after is not None:
        headers["Retry-After"] = str(kind.retry_after)
    retry_after = exc.retry_after if isinstance(exc, RateLimited) else None
    return error_response(
        kind.status, kind.code, render(kind.rest, exc), fields, retry_after, headers=headers
    )


async def on_memex_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, MemexError)
    return memex_error_response(exc)


def _not_a_uuid(request: Request) -> str | None:
    """For a path that one of the app's routes would take if its `{name:uuid}` segments
    were UUIDs (GET /v1/memories/123): which parameter must be one."""
    path = request.scope.get("path", "")
    for route in getattr(request.app, "routes", ()):
        convertors = getattr(route, "param_convertors", {})
        ids = [n for n, c in convertors.items() if isinstance(c, UUIDConvertor)]
        if not ids:
            continue
        parts = re.split(r"\{(\w+)\}", route.path_format)
        loose = "".join(
            re.escape(part) if i % 2 == 0 else f"(?P<{part}>[^/]+)" for i, part in enumerate(parts)
        )
        match = re.fullmatch(loose, path)
        if match:
            bad = [n for n in ids if not _UUID.fullmatch(match.group(n))]
            if bad:
                return f"no such route: {bad[0]} must be a UUID, e.g. {_EXAMPLE_UUID}"
    return None


# Operations that a path answered with another method once: the 405 says where they are.
MOVED = {
    ("DELETE", "/v1/memories"): "DELETE /v1/memories does not erase a user any more: erasing"
    " a user is POST /v1/users/erase with {agent_id, user_id, confirm} (confirm repeating"
    " user_id; admin keys only); DELETE /v1/memories/{memory_id} deletes one memory",
}

_UUID = re.compile(UUIDConvertor.regex)
_EXAMPLE_UUID = "3fa85f64-5717-4562-b3fc-2c963f66afa6"


async def on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    detail = str(exc.detail)
    if exc.status_code == 404:
        detail = _not_a_uuid(request) or detail
    if exc.status_code == 405:
        detail = MOVED.get((request.method, request.url.path), detail)
    # exc.headers carries e.g. the Allow header of a 405
    return error_response(
        exc.status_code,
        kind.code if (kind := BY_STATUS.get(exc.status_code)) else "http_error",
        detail,
        headers=dict(exc.headers or {}),
    )


class CatchAll:
    """ASGI middleware, the last line: an exception no handler took becomes a JSON 500,
    logged once, on a connection that stays open. (An `Exception` handler would run in
    Starlette's ServerErrorMiddleware, which re-raises: uvicorn then logged the error a
    second time and dropped the keep-alive connection.)"""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception:
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if started:  # too late for an error response: end the connection
                raise
            await error_response(500, "internal_error", "internal server error")(
                scope, receive, send
            )


# The OpenAI-compatible endpoints: their error replies carry OpenAI's error object too.
OPENAI_PATHS = frozenset({"/v1/embeddings"})


def openai_error_type(status: int) -> str:
    """OpenAI's error `type` for an HTTP status."""
    if status == 401:
        return "authentication_error"
    if status == 403:
        return "permission_error"
    if status == 429:
        return "rate_limit_error"
    return "server_error" if status >= 500 else "invalid_request_error"


def openai_error(status: int, body: dict[str, Any]) -> dict[str, Any]:
    """`body` (the service's JSON error) with OpenAI's error fields as well: `type`,
    `param` (the first bad field, else null), and for a 422 a message naming every bad
    field rather than counting them, since OpenAI's clients show only the message."""
    error = body.get("error")
    if not isinstance(error, dict):
        return body
    fields = [f for f in error.get("fields") or [] if isinstance(f, dict)]
    shaped = {**error}
    shaped.setdefault("type", openai_error_type(status))
    shaped.setdefault("param", str(fields[0]["field"]) if fields else None)
    if status == 422 and fields and error.get("message", "").endswith("invalid field(s)"):
        shaped["message"] = "; ".join(f"{f['field']}: {f['message']}" for f in fields)
    return {**body, "error": shaped}


class OpenAIErrors:
    """ASGI middleware: the JSON error replies of OPENAI_PATHS in OpenAI's shape too
    (`{"error": {"message", "type", "param", "code"}}`, and the service's `fields` and
    `retry_after_seconds`), whichever layer answered (validation, credentials, rate
    limits, the router's 405, a body too large); other replies pass through untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") not in OPENAI_PATHS:
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        chunks: list[bytes] = []

        async def reshaped(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers", []))
                media_type = headers.get(b"content-type", b"").split(b";")[0]
                if message["status"] >= 400 and media_type == b"application/json":
                    start = message  # held until the body is complete
                    return
            if start is None or message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            body = b"".join(chunks)
            try:
                parsed = json.loads(body)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                shaped = openai_error(start["status"], parsed)
                body = json.dumps(shaped, ensure_ascii=False, separators=(",", ":")).encode()
            kept = [(k, v) for k, v in start.get("headers", []) if k != b"content-length"]
            kept.append((b"content-length", str(len(body)).encode()))
            await send({**start, "headers": kept})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, reshaped)


HANDLERS = {
    ValidationError: on_validation_error,
    MemexError: on_memex_error,
    HTTPException: on_http_error,
}
