"""One place that turns errors into HTTP responses: typed JSON bodies, never internal
exception text."""

from __future__ import annotations

import logging
import math

from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from memexdb.errors import DatabaseUnavailable, InvalidArgument, MemexError, NotFound, RateLimited
from memexdb.params import ErrorBody, ErrorResponse, FieldError, field_errors

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


async def on_validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ValidationError)
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
        return error_response(404, exc.code, "memory not found for this agent_id and user_id")
    if isinstance(exc, RateLimited):
        return error_response(429, exc.code, "rate limit exceeded", retry_after=exc.retry_after)
    if isinstance(exc, DatabaseUnavailable):
        return error_response(
            503, exc.code, "database is unavailable, retry later", headers={"Retry-After": "5"}
        )
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


async def on_unexpected(request: Request, exc: Exception) -> Response:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return error_response(500, "internal_error", "internal server error")


HANDLERS = {
    ValidationError: on_validation_error,
    MemexError: on_memex_error,
    HTTPException: on_http_error,
    Exception: on_unexpected,
}
