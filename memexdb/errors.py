"""Typed errors. SQL raises them with SQLSTATE codes; Python maps them here, once.

| SQLSTATE | exception          | HTTP | meaning                                   |
|----------|--------------------|------|-------------------------------------------|
| MX422    | InvalidArgument    | 422  | a field is out of range; `field` names it |
| MX404    | NotFound           | 404  | no such id for this tenant                |
| MX409    | Conflict           | 409  | the file moved past the base revision     |
| MX429    | RateLimited        | 429  | over the configured per-minute limit      |
| 28000    | Unauthenticated    | 401  | no API key, or not a valid one            |
| 42501    | Forbidden          | 403  | the key may not do this (tenant, access)  |
| class 08, 57P0x, pool timeout | DatabaseUnavailable | 503 | database unreachable |
| 55P03, 57014       | Busy               | 503  | a lock or statement timeout of a request  |
"""

from __future__ import annotations

import json

import psycopg
import psycopg_pool


class MemexError(Exception):
    """Base class of every error memexdb raises on purpose."""

    code = "memex_error"


class InvalidArgument(MemexError):
    """A request field is invalid; `field` names it (e.g. ``importance``)."""

    code = "invalid_argument"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class NotFound(MemexError):
    """The id does not exist for this tenant (another tenant's id looks the same)."""

    code = "not_found"


class Conflict(MemexError):
    """A write based on a revision of a file that is no longer its current one."""

    code = "conflict"


class RateLimited(MemexError):
    """Over the operator's per-minute limit; retry after `retry_after` seconds."""

    code = "rate_limited"

    def __init__(self, message: str, retry_after: float, operation: str | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        # the limited operation: 'store' (writes) or 'search' (reads)
        self.operation = operation


class Unauthenticated(MemexError):
    """No API key where one is required, or a key that is malformed, unknown, revoked or
    expired (the message says which)."""

    code = "unauthenticated"


class Forbidden(MemexError):
    """The caller is known but may not do this: another agent or user than its key's, or
    a read-only key writing."""

    code = "forbidden"


class DatabaseUnavailable(MemexError):
    """The database cannot be reached or is shutting down."""

    code = "database_unavailable"


class Busy(MemexError):
    """A request waited longer than its lock timeout (another request holds what it
    needs) or ran past its statement timeout (memex._enter sets both); nothing of it was
    applied. Retry."""

    code = "busy"


class SetupError(MemexError):
    """The database is missing something memexdb needs (version, pgvector, migration)."""

    code = "setup_error"


def _field_of(message: str, column: str | None) -> str:
    if column:
        return column
    return message.split(":", 1)[0] if ":" in message else "request"


def translate(exc: BaseException) -> BaseException:
    """Map a driver exception to a MemexError; other exceptions come back unchanged."""
    if isinstance(exc, MemexError):
        return exc
    if isinstance(exc, psycopg_pool.PoolTimeout):
        return DatabaseUnavailable("database connection pool timed out")
    if isinstance(exc, psycopg.Error) and exc.sqlstate in ("28000", "42501"):
        # SQL's refusals (memex._enter, memex._authorize); class 28 is an OperationalError
        # to the driver, but the database is fine
        message = exc.diag.message_primary or str(exc)
        return (Unauthenticated if exc.sqlstate == "28000" else Forbidden)(message)
    if isinstance(exc, psycopg.errors.LockNotAvailable):
        return Busy("timed out waiting for a lock another request holds; nothing was applied")
    if isinstance(exc, psycopg.errors.QueryCanceled):
        return Busy("the request ran past its statement timeout; nothing was applied")
    if isinstance(exc, psycopg.OperationalError):
        return DatabaseUnavailable("database is unavailable")
    if not isinstance(exc, psycopg.Error):
        return exc
    state = exc.sqlstate or ""
    diag = exc.diag
    message = diag.message_primary or str(exc)
    if state == "MX422":
        field = _field_of(message, diag.column_name)
        text = message.split(": ", 1)[1] if message.startswith(f"{field}: ") else message
        return InvalidArgument(field, text)
    if state == "MX404":
        return NotFound(message)
    if state == "MX409":
        return Conflict(message)
    if state == "MX429":
        detail = json.loads(diag.message_detail) if diag.message_detail else {}
        retry = float(detail.get("retry_after_seconds", 1.0))
        return RateLimited(message, retry, detail.get("operation"))
    if state.startswith("08") or state in {"57P01", "57P02", "57P03"}:
        return DatabaseUnavailable("database is unavailable")
    if state == "22000" and "dimensions" in message:
        return InvalidArgument("embedding", message)
    return exc
