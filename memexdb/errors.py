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
| 40P01, 40001       | Busy               | 503  | lost a deadlock or serialization conflict |
"""

from __future__ import annotations

import json

import psycopg
import psycopg_pool
from memexdb_client.errors import (
    Busy,
    Conflict,
    DatabaseUnavailable,
    Forbidden,
    InvalidArgument,
    MemexError,
    NotFound,
    RateLimited,
    SetupError,
    Unauthenticated,
)

__all__ = [
    "LOST_CONFLICTS",
    "Busy",
    "Conflict",
    "DatabaseUnavailable",
    "Forbidden",
    "InvalidArgument",
    "MemexError",
    "ModelNotFound",
    "NotFound",
    "RateLimited",
    "SetupError",
    "Unauthenticated",
    "translate",
]


class ModelNotFound(NotFound):
    """POST /v1/embeddings named a model other than the service's (OpenAI's 404
    `model_not_found`)."""

    code = "model_not_found"


# A transaction PostgreSQL rolled back whole because a concurrent one won: a deadlock's
# loser (40P01), a serialization conflict (40001). Running it again applies it once.
LOST_CONFLICTS = (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure)


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
    if isinstance(exc, LOST_CONFLICTS):
        return Busy(
            "a concurrent request held what this one needed (a deadlock or serialization"
            " conflict); nothing was applied"
        )
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
