"""Typed errors, defined once: the server raises them (memexdb.errors maps SQLSTATE codes
to them) and the HTTP client raises the same classes from the error bodies.

`ERRORS` below is the one error table: for each error code of the API, its exception
class, the SQLSTATEs that raise it, its HTTP status, message, Retry-After, MCP tool error
and console page. Every surface reads it (memexdb.errors.translate, the REST and MCP
error answers, the console's error pages, this client's body->exception mapping) and
clients/typescript/scripts/generate_errors.py writes it for TypeScript
(src/generated/errors.ts). Adding an error is adding a row.

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

The HTTP client raises one more of its own: Unavailable, when no answer came from the
service (nothing listens at its URL, or the connection failed or timed out).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field


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
    needs) or ran past its statement timeout (memex._enter sets both), or found no free
    connection in the service's pool within its timeout (the database up); nothing of it
    was applied. Retry."""

    code = "busy"


class SetupError(MemexError):
    """The database is missing something memexdb needs (version, pgvector, migration)."""

    code = "setup_error"


LOST_CONFLICT = (
    "a concurrent request held what this one needed (a deadlock or serialization"
    " conflict); nothing was applied"
)


@dataclass(frozen=True)
class ErrorKind:
    """One row of the error table: what an error code is on every surface.

    Messages are templates over `{message}` (the exception's text), `{public}` (the same,
    except that a NotFound names what was not found rather than which id), `{field}`
    (InvalidArgument's field) and `{retry}` (RateLimited's wait, whole seconds, at least
    1)."""

    code: str  # the error body's `code` (and the exception's `code`)
    name: str  # the class name without "Error" (TypeScript: `{name}Error`)
    exception: type[MemexError] | None  # None: no Python class (the HTTP client: HTTPError)
    status: int  # the HTTP status of the REST (and MCP over HTTP) answer
    meaning: str  # one line, for the docs
    # SQLSTATE (five characters) or SQLSTATE class (two) -> the exception's message, None
    # to pass the SQL error's own message through to the caller
    sqlstates: Mapping[str, str | None] = field(default_factory=dict)
    sql_detail: str = "—"  # where the SQL error carries its details (docs/sql-api.md)
    rest: str = "{message}"  # the REST body's `message`
    retry_after: int | None = None  # a fixed Retry-After header, seconds (429: the error's)
    mcp: str = "{message}"  # the MCP tool error (`isError: true`) text
    console: tuple[str, str] = ("Error", "{message}")  # the console page's title, message


ERRORS: tuple[ErrorKind, ...] = (
    # The first row of a status is the code a client assumes for a bare answer with it.
    ErrorKind(
        "invalid_argument",
        "InvalidArgument",
        InvalidArgument,
        422,
        "a field is out of range or of the wrong form; `field` names it",
        {"MX422": None, "22": None},
        sql_detail="message `field: reason`; the field name in the error's COLUMN"
        " (`diag.column_name`), e.g. `top_k`, `memories[3].content`",
        rest="{field}: {message}",
        mcp="invalid argument {field}: {message}",
        console=("Invalid input", "Some fields are not valid:"),
    ),
    ErrorKind(
        "not_found",
        "NotFound",
        NotFound,
        404,
        "no such id for this tenant (another tenant's id looks the same)",
        {"MX404": None},
        rest="{public}",
        mcp="{public}",
        console=("Not found", "{message}"),
    ),
    ErrorKind(
        "model_not_found",
        "NotFound",
        NotFound,
        404,
        "POST /v1/embeddings named a model other than the service's (OpenAI's 404)",
        rest="{public}",
        mcp="{public}",
        console=("Not found", "{message}"),
    ),
    ErrorKind(
        "conflict",
        "Conflict",
        Conflict,
        409,
        "the file moved past the base revision, a patch does not apply, an id is taken",
        {"MX409": None},
        sql_detail="also restoring a delete; for a stale revision DETAIL is JSON"
        ' `{"current_revision": 3}`; otherwise the message names the field (`old_text: …`)',
        mcp="conflict: {message} (read the file again and retry)",
        console=("Conflict", "{message}"),
    ),
    ErrorKind(
        "rate_limited",
        "RateLimited",
        RateLimited,
        429,
        "over the operator's per-minute rate limit",
        {"MX429": None},
        sql_detail='DETAIL is JSON `{"retry_after_seconds": 12.5, "operation": "store"}`'
        " (`store`: writes, `search`: reads)",
        rest="rate limit exceeded",
        mcp="rate limit exceeded; retry in {retry} s",
        console=("Too many requests", "Rate limit exceeded."),
    ),
    ErrorKind(
        "unauthenticated",
        "Unauthenticated",
        Unauthenticated,
        401,
        "no API key where one is needed, or one that is malformed, unknown, revoked or"
        " expired (the message says which)",
        {"28000": None},
        sql_detail="also no caller at all (memex_app before `memex._enter`, an unbound member"
        " of memex_tenant); the message says which",
        mcp="not authenticated: {message}",
        console=("Not logged in", "{message}"),
    ),
    ErrorKind(
        "forbidden",
        "Forbidden",
        Forbidden,
        403,
        "the key may not do this: another agent or user than its scope, or too little access",
        {"42501": None},
        sql_detail="too little access is e.g. read writing, write managing keys; the message"
        " names the agent/user or the access needed",
        mcp="permission denied: {message}",
        console=(
            "Not allowed",
            "Your key may not do this: {message}. The console needs an admin key.",
        ),
    ),
    ErrorKind(
        "database_unavailable",
        "DatabaseUnavailable",
        DatabaseUnavailable,
        503,
        "the database cannot be reached or is shutting down",
        {
            "08": "database is unavailable",
            "57P01": "database is unavailable",
            "57P02": "database is unavailable",
            "57P03": "database is unavailable",
        },
        rest="database is unavailable, retry later",
        retry_after=5,
        mcp="the memory database is unavailable; retry later",
        console=("Database unavailable", "The database is unavailable; retry in a moment."),
    ),
    ErrorKind(
        "busy",
        "Busy",
        Busy,
        503,
        "a lock or statement timeout, a lost deadlock or serialization conflict, or no"
        " free database connection in the service's pool (saturated, the database up);"
        " nothing was applied, retry",
        {
            "55P03": "timed out waiting for a lock another request holds; nothing was applied",
            "57014": "the request ran past its statement timeout; nothing was applied",
            "40P01": LOST_CONFLICT,
            "40001": LOST_CONFLICT,
        },
        retry_after=1,
        mcp="busy: {message}; retry",
        console=("Busy", "{message}; retry in a moment."),
    ),
    ErrorKind(
        "payload_too_large",
        "PayloadTooLarge",
        None,
        413,
        "the body is over the service's limit (16 MiB)",
    ),
    ErrorKind("method_not_allowed", "MethodNotAllowed", None, 405, "no such method on this path"),
    ErrorKind(
        "unsupported_media_type",
        "UnsupportedMediaType",
        None,
        415,
        "a body of another media type than the endpoint reads (POST /v1/import)",
    ),
    ErrorKind(
        "host_not_allowed", "HostNotAllowed", None, 421, "the service does not answer this Host"
    ),
    ErrorKind(
        "origin_not_allowed",
        "OriginNotAllowed",
        None,
        403,
        "a browser Origin the service does not allow",
    ),
    ErrorKind(
        "internal_error",
        "Internal",
        None,
        500,
        "the service failed (never with internal details)",
        rest="internal server error",
        mcp="internal error",
        console=("Internal error", "Internal server error."),
    ),
)

BY_CODE: Mapping[str, ErrorKind] = {kind.code: kind for kind in ERRORS}
# the code of a bare answer with a status (no error body): the first row of the status
BY_STATUS: Mapping[int, ErrorKind] = {k.status: k for k in reversed(ERRORS)}
INTERNAL = BY_CODE["internal_error"]


def kind_of(exc: MemexError) -> ErrorKind:
    """The row of a raised error: by its `code`, else by its nearest class that has one
    (a subclass with a code of its own), else internal_error."""
    for cls in type(exc).__mro__:
        kind = BY_CODE.get(getattr(cls, "code", ""))
        if kind is not None and kind.exception is not None:
            return kind
    return INTERNAL


def kind_of_sqlstate(sqlstate: str) -> ErrorKind | None:
    """The row of a SQLSTATE: the row naming it, else the row naming its class."""
    for key in (sqlstate, sqlstate[:2]):
        for kind in ERRORS:
            if key in kind.sqlstates:
                return kind
    return None


# What a NotFound names, by the start of its message (sql/: MX404). A memory's message is
# never echoed (it holds the id); a file's names the path the caller gave.
_NOT_FOUND = (
    ("memory ", "memory not found for this agent_id and user_id"),
    ("API key ", "key not found"),
    ("consolidation run ", "run not found"),
)


def not_found_message(message: str) -> str:
    """The message a 404 (REST) or tool error (MCP) says for a NotFound: what was not
    found, not which id."""
    for start, said in _NOT_FOUND:
        if message.startswith(start):
            return said
    return message


def render(template: str, exc: BaseException) -> str:
    """A message template of the table filled from `exc`."""
    retry_after = getattr(exc, "retry_after", None)
    return template.format(
        message=str(exc),
        public=not_found_message(str(exc)) if isinstance(exc, NotFound) else str(exc),
        field=getattr(exc, "field", ""),
        retry=max(1, math.ceil(retry_after)) if retry_after is not None else 1,
    )
