"""Typed errors. SQL raises them with SQLSTATE codes; Python maps them here, once, by the
error table (`memexdb_client.errors.ERRORS`, which every surface reads):

<!-- errors:begin (written from ERRORS by clients/typescript/scripts/generate_errors.py) -->
| SQLSTATE | exception | code | HTTP |
| --- | --- | --- | --- |
| MX422, class 22 | InvalidArgument | invalid_argument | 422 |
| MX404 | NotFound | not_found | 404 |
| MX409 | Conflict | conflict | 409 |
| MX429 | RateLimited | rate_limited | 429 |
| 28000 | Unauthenticated | unauthenticated | 401 |
| 42501 | Forbidden | forbidden | 403 |
| class 08, 57P01, 57P02, 57P03 | DatabaseUnavailable | database_unavailable | 503 |
| 55P03, 57014, 40P01, 40001 | Busy | busy | 503 |
<!-- errors:end -->

A pool that hands out no connection in time is DatabaseUnavailable too.
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
    kind_of_sqlstate,
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


def _field_of(message: str, column: str | None, sqlstate: str) -> str:
    if column:
        return column
    if sqlstate != "MX422":  # PostgreSQL's own check of a value (class 22)
        return "embedding" if "dimensions" in message else "request"
    return message.split(":", 1)[0] if ":" in message else "request"


def translate(exc: BaseException) -> BaseException:
    """Map a driver exception to a MemexError by its SQLSTATE, as the error table
    (memexdb_client.errors.ERRORS) says; other exceptions come back unchanged."""
    if isinstance(exc, MemexError):
        return exc
    if isinstance(exc, psycopg_pool.PoolTimeout):
        # the database answers (an outage is DatabaseUnavailable at once: memexdb.db):
        # every connection of the pool stayed busy for its whole timeout
        return Busy(
            "no database connection was free within the pool's timeout (the service is"
            " saturated); nothing was applied"
        )
    if not isinstance(exc, psycopg.Error):
        return exc
    state = exc.sqlstate or ""
    kind = kind_of_sqlstate(state) if state else None
    if kind is None or kind.exception is None:
        # no SQLSTATE of the table: a failed connection (the driver's OperationalError
        # without one, or class 53: out of connections) is the database's unavailability
        if isinstance(exc, psycopg.OperationalError):
            return DatabaseUnavailable("database is unavailable")
        return exc
    diag = exc.diag
    message = kind.sqlstates.get(state, kind.sqlstates.get(state[:2]))
    if message is None:  # the SQL error's own message is the caller's
        message = diag.message_primary or str(exc)
    if kind.exception is InvalidArgument:
        field = _field_of(message, diag.column_name, state)
        text = message.split(": ", 1)[1] if message.startswith(f"{field}: ") else message
        return InvalidArgument(field, text)
    if kind.exception is RateLimited:
        detail = json.loads(diag.message_detail) if diag.message_detail else {}
        retry = float(detail.get("retry_after_seconds", 1.0))
        return RateLimited(message, retry, detail.get("operation"))
    return kind.exception(message)
