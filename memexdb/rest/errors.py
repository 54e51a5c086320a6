"""One place that turns errors into HTTP responses: typed JSON bodies, never internal
exception text."""

from __future__ import annotations

import logging
import math

from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memexdb.bearer import BEARER_CHALLENGE
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
from memexdb.params import ErrorBody, ErrorResponse, FieldError, field_errors, not_found_message
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


async def on_memex_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, InvalidArgument):
        return error_response(
            422,
            exc.code,
            f"{exc.field}: {exc.message}",
            [FieldError(field=exc.field, message=exc.message)],
        )
    if isinstance(exc, NotFound):
        return error_response(404, exc.code, not_found_message(str(exc)))
    if isinstance(exc, Conflict):
        return error_response(409, exc.code, str(exc))
    if isinstance(exc, Unauthenticated):
        return error_response(
            401, exc.code, str(exc), headers={"WWW-Authenticate": BEARER_CHALLENGE}
        )
    if isinstance(exc, Forbidden):
        return error_response(403, exc.code, str(exc))
    if isinstance(exc, RateLimited):
        return error_response(429, exc.code, "rate limit exceeded", retry_after=exc.retry_after)
    if isinstance(exc, DatabaseUnavailable):
        return error_response(
            503, exc.code, "database is unavailable, retry later", headers={"Retry-After": "5"}
        )
    if isinstance(exc, Busy):
        return error_response(503, exc.code, str(exc), headers={"Retry-After": "1"})
    assert isinstance(exc, MemexError)
    log.error("unexpected memexdb error: %r", exc)
    return error_response(500, "internal_error", "internal server error")


async def on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    codes = {404: "not_found", 405: "method_not_allowed", 413: "payload_too_large"}
    # exc.headers carries e.g. the Allow header of a 405
    return error_response(
        exc.status_code,
        codes.get(exc.status_code, "http_error"),
        str(exc.detail),
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


HANDLERS = {
    ValidationError: on_validation_error,
    MemexError: on_memex_error,
    HTTPException: on_http_error,
}
