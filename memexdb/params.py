"""Every parameter of the memexdb API, defined once: its type, bounds, default and
description, and the request and response models built from them. REST bodies, MCP tool
signatures, the OpenAPI document and the Python client all use these; the SQL functions
(sql/*.sql) hold the same bounds and defaults, and tests/test_params.py keeps the two in
step.
"""

from __future__ import annotations

import enum
import json
import math
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, TypeVar
from uuid import UUID

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    WithJsonSchema,
)
from typing_extensions import TypeAliasType

from memexdb.errors import InvalidArgument
from memexdb.types import MemoryType, SearchMode

# Bounds (sql/: memex._check_tenant, memex._check_memory, memex.search).
TENANT_ID_MAX_CHARS = 128
CONTENT_MAX_CHARS = 32768
QUERY_MAX_CHARS = 8000
TOP_K_MAX = 100
HALF_LIFE_MIN_DAYS = 0.001  # shorter would overflow the decay's exponent in SQL
HALF_LIFE_MAX_DAYS = 36500.0
IMPORTANCE_MAX = 2.0
IMPORTANCE_MIN_POSITIVE = 1e-6  # importance is a real: smaller positive values underflow
METADATA_MAX_BYTES = 65536  # of JSON text, as Postgres writes jsonb
METADATA_MAX_DEPTH = 32  # nested objects/arrays; checked before Postgres sees the value
BATCH_MAX_ITEMS = 1000  # per REST request (a body size limit; SQL and Python take more)

# Defaults (the same as the SQL functions' argument defaults).
DEFAULT_TOP_K = 10
# No alpha sent (None, SQL null): score = relevance * (1 + RECENCY_BOOST * recency) *
# importance, recency a bounded tiebreaker; an alpha sent explicitly gets the memex formula
# (alpha * relevance + (1 - alpha) * recency) * importance. README "Ranking".
DEFAULT_ALPHA: float | None = None
RECENCY_BOOST = 0.25  # memex._score's constant
# No half-life sent (None, SQL null): HALF_LIFE_DAYS_DEFAULT with the default formula (no
# alpha), HALF_LIFE_DAYS_MEMEX (memex's own default) when an alpha is sent.
DEFAULT_HALF_LIFE_DAYS: float | None = None
HALF_LIFE_DAYS_DEFAULT = 90.0
HALF_LIFE_DAYS_MEMEX = 30.0
# No mode sent (None, SQL null): hybrid for the default ranking (no alpha sent) when there
# is a query text (always through the client, REST and MCP); vector (memex's) when an alpha
# is sent, or for SQL callers that send only an embedding.
DEFAULT_MODE: SearchMode | None = None
DEFAULT_MEMORY_TYPE = MemoryType.EPISODIC
DEFAULT_IMPORTANCE = 1.0

# What SQL trims as whitespace (btrim with these characters); Postgres text cannot hold NUL.
_BLANK = " \t\n\r\f\v"
_NO_NUL = "^[^\\x00]*$"
_NOT_BLANK = "^[^\\x00]*[^ \\t\\n\\r\\f\\x0b\\x00][^\\x00]*$"


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


def _not_blank(value: str) -> str:
    if not value.strip(_BLANK):
        raise ValueError("must contain a non-whitespace character")
    return _no_nul(value)


def _json_value(value: Any, depth: int) -> None:
    if depth > METADATA_MAX_DEPTH:
        raise ValueError(f"must not nest deeper than {METADATA_MAX_DEPTH} levels")
    if isinstance(value, str):
        _no_nul(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError("must have string keys")
            _no_nul(key)
            _json_value(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _json_value(item, depth + 1)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must not hold NaN or infinite numbers")
    elif value is not None and not isinstance(value, bool | int | float):
        raise ValueError("must hold only JSON values")


def _check_metadata(value: Any) -> Any:
    # Before the type's own validation, so that a bad value anywhere inside is one clear
    # error of the field rather than one per member of the recursive union.
    if not isinstance(value, dict):
        return value  # None, or not an object: the type check says so
    _json_value(value, 0)
    # Measured as Postgres writes jsonb as text (", " and ": "), as memex._check_memory does.
    size = len(json.dumps(value, ensure_ascii=False).encode())
    if size > METADATA_MAX_BYTES:
        raise ValueError(f"must be at most {METADATA_MAX_BYTES} bytes of JSON")
    return value


def _importance(value: float) -> float:
    if 0 < value < IMPORTANCE_MIN_POSITIVE:
        raise ValueError(f"must be 0 or between {IMPORTANCE_MIN_POSITIVE:f} and 2")
    return value


def _utc(value: datetime | None) -> datetime | None:
    # Naive times are UTC; any offset Python accepts (up to +-23:59) becomes UTC, which
    # Postgres takes whatever the offset was (it refuses offsets beyond +-15:59).
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _text(max_chars: int, description: str, *, blank: bool = False) -> Any:
    # The pattern is for the schema's readers (clients, fuzzers); the validators next to
    # it give the error message a person can act on.
    return Field(
        min_length=1,
        max_length=max_chars,
        description=description,
        json_schema_extra={"pattern": _NO_NUL if blank else _NOT_BLANK},
    )


_NoNul = AfterValidator(_no_nul)
_NotBlank = AfterValidator(_not_blank)

AgentId = Annotated[
    str,
    _text(
        TENANT_ID_MAX_CHARS,
        "Your agent's id; memories are private to (agent_id, user_id).",
        blank=True,
    ),
    _NoNul,
]
UserId = Annotated[
    str,
    _text(TENANT_ID_MAX_CHARS, "The user the memories are about or belong to.", blank=True),
    _NoNul,
]
Content = Annotated[
    str,
    _text(
        CONTENT_MAX_CHARS,
        "The memory, as a self-contained sentence or short passage (not only whitespace).",
    ),
    _NotBlank,
]
Query = Annotated[
    str, _text(QUERY_MAX_CHARS, "What to recall, in plain words (not only whitespace)."), _NotBlank
]


def _enum(values: type[enum.StrEnum], description: str) -> WithJsonSchema:
    # Inline rather than a $ref: MCP clients hand tool schemas to models as they are.
    return WithJsonSchema(
        {"type": "string", "enum": [v.value for v in values], "description": description}
    )


_KIND = (
    "semantic: facts and preferences; episodic: events and conversations;"
    " procedural: how to do things."
)
Kind = Annotated[MemoryType, _enum(MemoryType, _KIND)]
Importance = Annotated[
    float,
    Strict(),
    Field(
        ge=0.0,
        le=IMPORTANCE_MAX,
        allow_inf_nan=False,
        description="0 to 2; scales the memory's score (1 = normal, 2 = twice as strong)."
        f" A positive value must be at least {IMPORTANCE_MIN_POSITIVE:f}.",
    ),
    AfterValidator(_importance),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "number", "const": 0},
                {"type": "number", "minimum": IMPORTANCE_MIN_POSITIVE, "maximum": IMPORTANCE_MAX},
            ],
            "description": "0 to 2; scales the memory's score (1 = normal, 2 = twice as"
            f" strong). A positive value must be at least {IMPORTANCE_MIN_POSITIVE:f}.",
        }
    ),
]
# The schema of metadata's strings: no NUL (jsonb cannot hold \u0000); _check_metadata
# enforces it. As an object key the pattern sits under allOf, so the schema says
# propertyNames rather than patternProperties (which would leave other keys unconstrained).
_MetadataString = Annotated[str, WithJsonSchema({"type": "string", "pattern": _NO_NUL})]
_MetadataKey = Annotated[str, WithJsonSchema({"type": "string", "allOf": [{"pattern": _NO_NUL}]})]
if TYPE_CHECKING:
    MetadataValue = Any
else:
    MetadataValue = TypeAliasType(
        "MetadataValue",
        _MetadataString
        | Annotated[bool, Strict()]
        | int
        | float
        | list["MetadataValue"]
        | dict[_MetadataKey, "MetadataValue"]
        | None,
    )
Metadata = Annotated[
    dict[_MetadataKey, MetadataValue] | None,
    Field(
        description=f"Optional JSON object kept with the memory (at most {METADATA_MAX_BYTES}"
        f" bytes as JSON text, nested at most {METADATA_MAX_DEPTH} levels, no NUL"
        " characters)."
    ),
    BeforeValidator(_check_metadata),
]
Timestamp = Annotated[
    datetime | None,
    Strict(),  # an ISO 8601 string: a bare number is not a date
    AfterValidator(_utc),
]


def _integral(value: Any) -> Any:
    # JSON Schema counts 3.0 as an integer; strict mode (below) would refuse it.
    return int(value) if isinstance(value, float) and value.is_integer() else value


TopK = Annotated[
    int,
    # Strict: JSON true or "3" is not an integer (pydantic's lax mode would take both).
    Strict(),
    BeforeValidator(_integral),
    Field(ge=1, le=TOP_K_MAX, description=f"How many memories to return (1 to {TOP_K_MAX})."),
]
Alpha = Annotated[
    Annotated[float, Strict()] | None,
    Field(
        ge=0.0,
        le=1.0,
        allow_inf_nan=False,
        description="Weight of relevance against recency in the memex formula"
        " alpha * relevance + (1 - alpha) * recency: 1 = relevance only, 0 = newest first."
        " Not sent (null, the default): relevance * (1 + 0.25 * recency), where recency"
        " only breaks ties among relevant memories of any age.",
    ),
]
HalfLifeDays = Annotated[
    Annotated[float, Strict()] | None,
    Field(
        ge=HALF_LIFE_MIN_DAYS,
        le=HALF_LIFE_MAX_DAYS,
        allow_inf_nan=False,
        description="Age in days at which recency has halved. Not sent (null, the default):"
        f" {HALF_LIFE_DAYS_DEFAULT:g} days without alpha, {HALF_LIFE_DAYS_MEMEX:g} with alpha.",
    ),
]
_MODE = (
    "vector: cosine similarity; text: BM25 full-text rank; hybrid: both blended."
    " Not sent: hybrid, or vector when alpha is sent (the memex ranking)."
)
Mode = Annotated[
    Annotated[SearchMode, _enum(SearchMode, _MODE)] | None,
    Field(description=_MODE),
]
ContextWeight = Annotated[
    Annotated[float, Strict()] | None,
    Field(
        ge=0.0,
        le=1.0,
        allow_inf_nan=False,
        description="How much a memory's neighbours in time lend it relevance"
        " (default 0 in vector mode, 0.5 in text and hybrid mode).",
    ),
]
MemoryTypeFilter = Annotated[
    Annotated[MemoryType, _enum(MemoryType, _KIND)] | None,
    Field(description="Only memories of this type."),
]
MemoryTypes = Annotated[
    list[Annotated[MemoryType, _enum(MemoryType, _KIND)]] | None,
    Field(min_length=1, description="Only memories of these types."),
]
MemoryId = Annotated[UUID, Field(description="The id of the memory, as returned by the API.")]


def type_filter(
    memory_type: MemoryType | None, memory_types: list[MemoryType] | None
) -> list[MemoryType] | None:
    """A search's type filter: memory_types, or the memex field memory_type alone."""
    return memory_types or ([memory_type] if memory_type else None)


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MemoryCreate(_Request):
    """A memory to store for tenant (agent_id, user_id)."""

    agent_id: AgentId
    user_id: UserId
    content: Content
    memory_type: Kind = DEFAULT_MEMORY_TYPE
    importance: Importance = DEFAULT_IMPORTANCE
    metadata: Metadata = None
    expires_at: Annotated[
        Timestamp,
        Field(description="The memory disappears from search and count after this (UTC if naive)."),
    ] = None
    created_at: Annotated[
        Timestamp, Field(description="Back-date an imported memory (default: now; UTC if naive).")
    ] = None


class NewMemory(MemoryCreate):
    """One item of AsyncMemex.store_many, built by hand: a bad field raises the Python
    API's InvalidArgument, as the client's methods do."""

    def __init__(self, **values: Any) -> None:
        # (pydantic's model_validate calls an overridden __init__ too: hence a subclass,
        # so that the frontends' bodies keep their full list of bad fields)
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise invalid_argument(exc) from None


class MemoryBatchCreate(_Request):
    """Many memories in one request, for imports (one statement, all or nothing)."""

    memories: list[MemoryCreate] = Field(min_length=1, max_length=BATCH_MAX_ITEMS)


class MemorySearchRequest(_Request):
    """Search a tenant's memories: score = relevance * (1 + 0.25 * recency) * importance, or
    (alpha*relevance + (1-alpha)*recency)*importance when alpha is sent."""

    agent_id: AgentId
    user_id: UserId
    query: Query
    top_k: TopK = DEFAULT_TOP_K
    alpha: Alpha = DEFAULT_ALPHA
    half_life_days: HalfLifeDays = DEFAULT_HALF_LIFE_DAYS
    memory_type: MemoryTypeFilter = None
    memory_types: MemoryTypes = None
    mode: Mode = DEFAULT_MODE
    context_weight: ContextWeight = None

    def types(self) -> list[MemoryType] | None:
        return type_filter(self.memory_type, self.memory_types)


class TenantQuery(_Request):
    """The tenant in a URL's query string."""

    agent_id: AgentId
    user_id: UserId


class CountQuery(TenantQuery):
    """Query string of GET /v1/memories/count."""

    memory_type: MemoryTypeFilter = None


class MemoryOut(BaseModel):
    """A stored memory."""

    model_config = ConfigDict(from_attributes=True)

    id: UUID
    agent_id: str
    user_id: str
    content: str
    memory_type: MemoryType
    importance: float
    metadata: dict[str, Any]
    created_at: datetime
    expires_at: datetime | None = None
    score: float | None = Field(default=None, description="null here; set in search results")


class MemoryBatchResponse(BaseModel):
    memories: list[MemoryOut]
    total: int


class SearchResult(MemoryOut):
    """A ranked memory with the parts of its score: score = relevance * (1 + 0.25 *
    recency) * importance, or (alpha * relevance + (1 - alpha) * recency) * importance
    when alpha is sent."""

    score: float
    similarity: float | None = Field(description="cosine similarity of query and memory")
    text_rank: float | None = Field(description="BM25 score (text and hybrid modes)")
    relevance: float = Field(description="what the mode ranks by, with context from neighbours")
    recency: float = Field(description="exp(-ln 2 * age_days / half_life_days)")


class SearchResponse(BaseModel):
    """Ranked memories of one tenant, best first."""

    agent_id: str
    user_id: str
    query: str
    total: int
    results: list[SearchResult]


class CountResponse(BaseModel):
    """Number of live memories of a tenant (of one type, if given)."""

    agent_id: str
    user_id: str
    memory_type: MemoryType | None = None
    count: int


class Deleted(BaseModel):
    """The memory that was deleted."""

    deleted: MemoryOut


class HealthResponse(BaseModel):
    status: str
    db: str
    version: str


class FieldError(BaseModel):
    field: str
    message: str


class ErrorBody(BaseModel):
    code: str = Field(
        description="invalid_argument | not_found | rate_limited | database_unavailable"
        " | payload_too_large | method_not_allowed | host_not_allowed | origin_not_allowed"
        " | internal_error"
    )
    message: str
    fields: list[FieldError] = Field(default_factory=list)
    retry_after_seconds: float | None = None


class ErrorResponse(BaseModel):
    error: ErrorBody


def field_name(loc: tuple[int | str, ...]) -> str:
    """A pydantic error location as the API names fields: `memories[3].content`."""
    name = ""
    for part in loc:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name or "body"


_Model = TypeVar("_Model", bound=BaseModel)


def field_errors(exc: ValidationError) -> list[FieldError]:
    """One entry per bad field, named as the API names it, with a readable message."""
    return [
        FieldError(
            field=field_name(tuple(e["loc"])), message=str(e["msg"]).removeprefix("Value error, ")
        )
        for e in exc.errors(include_url=False)
    ]


def invalid_argument(exc: ValidationError) -> InvalidArgument:
    """The first bad field as the Python API's typed error."""
    first = field_errors(exc)[0]
    return InvalidArgument(first.field, first.message)


def validated(model: type[_Model], **values: Any) -> _Model:
    """Build `model` from Python values, raising InvalidArgument for the first bad field
    (the Python API's form of the 422 the frontends answer)."""
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise invalid_argument(exc) from None
