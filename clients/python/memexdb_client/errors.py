"""Typed errors, defined once: the server raises them (memexdb.errors maps SQLSTATE codes
to them) and the HTTP client raises the same classes from the error bodies.

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

The HTTP client raises one more of its own: Unavailable, when no answer came from the
service (nothing listens at its URL, or the connection failed or timed out).
"""

from __future__ import annotations


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


class Unavailable(MemexError):
    """The HTTP client got no answer from the service at `url` (after its retries, when
    the request may be retried): nothing listens there, the connection was refused, broke
    or timed out. Only the HTTP client raises it; `__cause__` is httpx's error. Whether a
    write was applied is unknown when the connection broke after the request was sent."""

    code = "unavailable"

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"memexdb service at {url} is unavailable: {reason}")
        self.url = url
        self.reason = reason


class Busy(MemexError):
    """A request waited longer than its lock timeout (another request holds what it
    needs) or ran past its statement timeout (memex._enter sets both); nothing of it was
    applied. Retry."""

    code = "busy"


class SetupError(MemexError):
    """The database is missing something memexdb needs (version, pgvector, migration)."""

    code = "setup_error"
