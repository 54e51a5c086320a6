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
import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, TypeVar
from uuid import UUID

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic.config import JsonDict
from typing_extensions import TypeAliasType

from memexdb.embedding.protocol import BLANK
from memexdb.errors import InvalidArgument
from memexdb.types import Access, MemoryType, SearchMode

# Bounds (sql/: memex._check_tenant, memex._check_memory, memex.search).
TENANT_ID_MAX_CHARS = 128
CONTENT_MAX_CHARS = 32768
QUERY_MAX_CHARS = 8000
TOP_K_MAX = 100
HALF_LIFE_MIN_DAYS = 0.001  # shorter would overflow the decay's exponent in SQL
HALF_LIFE_MAX_DAYS = 36500.0
IMPORTANCE_MAX = 2.0
IMPORTANCE_MIN_POSITIVE = 1e-6  # smaller positive values underflow the score in SQL
METADATA_MAX_BYTES = 65536  # of JSON text, as Postgres writes jsonb
METADATA_MAX_DEPTH = 32  # nested objects/arrays; checked before Postgres sees the value
BATCH_MAX_ITEMS = 1000  # per REST request (a body size limit; SQL and Python take more)
LIST_LIMIT_MAX = 1000  # memories per page of memex.list_memories / memex.export_memories

# Defaults (the same as the SQL functions' argument defaults).
DEFAULT_TOP_K = 10
# No alpha sent (None, SQL null): score = relevance * (1 + RECENCY_BOOST * recency) *
# importance, recency a bounded tiebreaker; an alpha sent explicitly gets the memex formula
# (alpha * relevance + (1 - alpha) * recency) * importance. docs/ranking.md.
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
DEFAULT_LIST_LIMIT = 50
DEFAULT_EXPORT_BATCH = 500  # memories per page of an export and per statement of an import

# What SQL trims as whitespace (btrim with these characters); Postgres text cannot hold NUL.
_BLANK = BLANK  # memexdb.embedding.protocol: the embedders refuse the same texts
_NO_NUL = "^[^\\x00]*$"
_NOT_BLANK = "^[^\\x00]*[^ \\t\\n\\r\\f\\x0b\\x00][^\\x00]*$"


def no_nul(value: str) -> str:
    """Refuse a NUL character (Postgres text cannot hold one)."""
    if value is not None and "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


def _not_blank(value: str) -> str:
    if value is None:  # an optional field left out
        return value
    if not value.strip(_BLANK):
        raise ValueError("must contain a non-whitespace character")
    return no_nul(value)


_TOO_DEEP = f"must not nest deeper than {METADATA_MAX_DEPTH} levels"


def _json_value(value: Any, depth: int) -> None:
    if depth > METADATA_MAX_DEPTH:
        raise ValueError(_TOO_DEEP)
    if isinstance(value, str):
        no_nul(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError("must have string keys")
            no_nul(key)
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


def _text(max_chars: int, description: str, example: str, *, blank: bool = False) -> Any:
    # The pattern is for the schema's readers (clients, fuzzers); the validators next to
    # it give the error message a person can act on. The example is what /docs fills in
    # (memexdb.rest.docs), not the pattern's random text.
    return Field(
        min_length=1,
        max_length=max_chars,
        description=description,
        examples=[example],
        json_schema_extra={"pattern": _NO_NUL if blank else _NOT_BLANK},
    )


# The examples of the OpenAPI document (one tenant, one memory and one file that go
# together: /docs "Try it out" stores, then finds, the same memory).
EXAMPLE_AGENT = "demo-agent"
EXAMPLE_USER = "alice"
EXAMPLE_CONTENT = "Alice prefers green tea to coffee."
EXAMPLE_QUERY = "What does Alice like to drink?"
EXAMPLE_PATH = "user/profile.md"


_NoNul = AfterValidator(no_nul)
_NotBlank = AfterValidator(_not_blank)

AgentId = Annotated[
    str,
    _text(
        TENANT_ID_MAX_CHARS,
        "Your agent's id; memories are private to (agent_id, user_id).",
        EXAMPLE_AGENT,
        blank=True,
    ),
    _NoNul,
]
UserId = Annotated[
    str,
    _text(
        TENANT_ID_MAX_CHARS,
        "The user the memories are about or belong to.",
        EXAMPLE_USER,
        blank=True,
    ),
    _NoNul,
]
Content = Annotated[
    str,
    _text(
        CONTENT_MAX_CHARS,
        "The memory, as a self-contained sentence or short passage (not only whitespace).",
        EXAMPLE_CONTENT,
    ),
    _NotBlank,
]
Query = Annotated[
    str,
    _text(QUERY_MAX_CHARS, "What to recall, in plain words (not only whitespace).", EXAMPLE_QUERY),
    _NotBlank,
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
# A JSON value, as validation sees it (no NUL in a string or key, jsonb cannot hold
# \u0000: _check_metadata enforces it, and the depth and size bounds).
if TYPE_CHECKING:
    MetadataValue = Any
else:
    MetadataValue = TypeAliasType(
        "MetadataValue",
        str
        | Annotated[bool, Strict()]
        | int
        | float
        | list["MetadataValue"]
        | dict[str, "MetadataValue"]
        | None,
    )
# What the JSON schema (OpenAPI, MCP) says of a metadata object: any JSON object, in one
# non-recursive schema. A recursive one (a JSON value that names itself) made
# openapi-python-client drop the operations that take metadata and openapi-typescript write
# a type tsc refuses (TS2502). The bounds it cannot state without recursion (NUL in a
# nested string, the depth) are in the description, and validation still checks them all
# (MetadataValue above and _check_metadata).
_METADATA_OBJECT: JsonDict = {
    "type": "object",
    "propertyNames": {"pattern": _NO_NUL},
    "additionalProperties": True,
}
Metadata = Annotated[
    Annotated[dict[str, MetadataValue], WithJsonSchema(_METADATA_OBJECT)] | None,
    Field(
        description="Optional JSON object kept with the memory: its values any JSON (strings,"
        f" numbers, booleans, null, arrays, objects), at most {METADATA_MAX_BYTES} bytes as"
        f" JSON text, nested at most {METADATA_MAX_DEPTH} levels, no NUL character in any"
        " key or string (a 422 names the bound a value breaks).",
        examples=[{"source": "chat"}],
    ),
    BeforeValidator(_check_metadata),
]
Timestamp = Annotated[
    datetime | None,
    Strict(),  # an ISO 8601 string: a bare number is not a date
    AfterValidator(_utc),
]


def _in_future(value: datetime | None) -> datetime | None:
    # a memory that expires in the past would be stored invisible: say so instead
    if value is not None and value <= datetime.now(UTC):
        raise ValueError("must be in the future")
    return value


FutureTimestamp = Annotated[Timestamp, AfterValidator(_in_future)]


def _query_integer(value: Any) -> Any:
    # A query string's integer arrives as text: decimal digits only (no "1e3", "true").
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,19}", value):
        return int(value)
    return _integral(value)


def _integral(value: Any) -> Any:
    # JSON Schema counts 3.0 as an integer; strict mode (below) would refuse it.
    return int(value) if isinstance(value, float) and value.is_integer() else value


TopK = Annotated[
    int,
    # Before the validator, or the schema shows the bounds as unknown keywords (ge/le).
    Field(ge=1, le=TOP_K_MAX, description=f"How many memories to return (1 to {TOP_K_MAX})."),
    # Strict: JSON true or "3" is not an integer (pydantic's lax mode would take both).
    Strict(),
    BeforeValidator(_integral),
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
MemoryId = Annotated[
    UUID,
    Field(
        description="The id of the memory, as returned by the API.",
        examples=["0b8e2f4a-6c1d-4e7f-9a3b-5d2c8e1f0a47"],
    ),
]
MetadataFilter = Annotated[
    Metadata,
    Field(
        description="Only memories whose metadata contains this JSON object"
        ' (`metadata @> filter`: {"project": "x"} matches {"project": "x", "tag": 1}).',
        # {} contains nothing, so matches every memory: what "Try it out" sends changes nothing
        examples=[{}],
    ),
]


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_JSON_BRACKET = re.compile(r"[\[\]{}]")


def json_nesting(text: str) -> int:
    """How deeply the objects and arrays of JSON text nest (brackets inside strings do
    not count), measured without parsing it: a parser recurses once per level."""
    depth = deepest = 0
    for bracket in _JSON_BRACKET.findall(_JSON_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def _json_text(value: Any) -> Any:
    # A query string's JSON value (?metadata={"k":1}); Python callers pass the object.
    # The nesting bound of metadata (_check_metadata, METADATA_MAX_DEPTH) is applied to
    # the text before it is parsed: json.loads would exhaust Python's recursion limit on
    # a deep enough value (a RecursionError, not a 422). The object holding the metadata
    # is one more bracket than its depth 0.
    if isinstance(value, str):
        if json_nesting(value) > METADATA_MAX_DEPTH + 1:
            raise ValueError(_TOO_DEEP)
        try:
            return json.loads(value)
        except ValueError:
            raise ValueError("must be a JSON object") from None
    return value


MetadataQuery = Annotated[MetadataFilter, BeforeValidator(_json_text)]
ListLimit = Annotated[
    int,
    Field(
        ge=1,
        le=LIST_LIMIT_MAX,
        description=f"Memories per page (1 to {LIST_LIMIT_MAX}, default {DEFAULT_LIST_LIMIT}).",
    ),
    BeforeValidator(_integral),
]
QueryTimestamp = Annotated[datetime | None, AfterValidator(_utc)]

# A page cursor: the (created_at, id) of the last memory of a page, written as
# "<microseconds since 1970 UTC>.<id as 32 hex digits>". Every string of that pattern is a
# valid cursor (16 digits reach beyond year 2200 either way), so the schema says exactly
# what the API accepts; clients treat it as opaque.
_CURSOR = r"^-?[0-9]{1,16}\.[0-9a-f]{32}$"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def encode_cursor(created_at: datetime, memory_id: UUID) -> str:
    """The cursor after a memory: opaque to clients."""
    micros = (created_at - _EPOCH) // timedelta(microseconds=1)
    return f"{micros}.{memory_id.hex}"


def decode_cursor(cursor: str) -> tuple[datetime, UUID]:
    """(created_at, id) of a cursor made by encode_cursor."""
    micros, hex_id = cursor.split(".")
    return _EPOCH + timedelta(microseconds=int(micros)), UUID(hex=hex_id)


def _cursor(value: str | None) -> str | None:
    if value is not None and not re.fullmatch(_CURSOR, value):
        raise ValueError("is not a cursor this API returned (next_cursor of a page)")
    return value


Cursor = Annotated[
    str | None,
    Field(
        description="next_cursor of the previous page (opaque); absent for the first page.",
        # the cursor after every memory (year 2286): the first page
        examples=["9999999999999999.ffffffffffffffffffffffffffffffff"],
        json_schema_extra={"pattern": _CURSOR},
    ),
    AfterValidator(_cursor),
]


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
        FutureTimestamp,
        Field(
            description="The memory disappears from search and count after this (UTC if"
            " naive); it must be in the future."
        ),
    ] = None
    created_at: Annotated[
        Timestamp, Field(description="Back-date an imported memory (default: now; UTC if naive).")
    ] = None


class MemoryStore(MemoryCreate):
    """A memory to store, optionally with the id it gets (POST /v1/memories, and each
    memory of a batch)."""

    id: Annotated[
        UUID | None,
        Field(
            description="The new memory's id (default: the service makes one). A client"
            " that may retry sends its own: a repeat of the same memory with that id is"
            " answered with the memory stored the first time, another memory with it is a"
            " 409 conflict."
        ),
    ] = None


class NewMemory(MemoryStore):
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

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "memories": [
                        {"agent_id": EXAMPLE_AGENT, "user_id": EXAMPLE_USER, "content": text}
                        for text in (EXAMPLE_CONTENT, "Alice is allergic to peanuts.")
                    ]
                }
            ]
        },
    )

    memories: list[MemoryStore] = Field(min_length=1, max_length=BATCH_MAX_ITEMS)


_INCLUDE_ARCHIVED = Field(
    description="Also the memories consolidation archived (by default their summary"
    " stands in for them); each says which summary replaced it (superseded_by)."
)
IncludeArchived = Annotated[bool, _INCLUDE_ARCHIVED, Strict()]
# in a query string: true / false
IncludeArchivedQuery = Annotated[bool, _INCLUDE_ARCHIVED]


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
    metadata: MetadataFilter = None
    include_archived: IncludeArchived = False
    now: Annotated[
        Timestamp,
        Field(
            description="Rank as of this time: recency is measured back from it (default:"
            " the database's now; UTC if naive). For evaluations that ask at a past date."
        ),
    ] = None

    def types(self) -> list[MemoryType] | None:
        return type_filter(self.memory_type, self.memory_types)


class TenantQuery(_Request):
    """The tenant in a URL's query string."""

    agent_id: AgentId
    user_id: UserId


class EraseUserRequest(TenantQuery):
    """Body of POST /v1/users/erase: the tenant to erase, and `confirm` repeating its
    user_id (memex.erase_user refuses the erasure otherwise)."""

    confirm: Annotated[
        str,
        Field(
            max_length=TENANT_ID_MAX_CHARS,
            description="The user_id again: every memory, file, revision and access-log row"
            " of the user is deleted, for good, only when it repeats user_id (otherwise a"
            " 422 naming `confirm`).",
            examples=[EXAMPLE_USER],
        ),
        _NoNul,
    ]


class MemoryRef(TenantQuery):
    """One memory of a tenant, by id (in REST: the tenant in the query, the id in the path)."""

    memory_id: MemoryId


AnyUserOfAgent = Annotated[
    UserId | None,
    Field(
        description="The memory's user; left out (memex's call): any user of agent_id this"
        " caller may act for."
    ),
]


class ForgetQuery(_Request):
    """Query string of DELETE /v1/memories/{memory_id}: the tenant, or only the agent."""

    agent_id: AgentId
    user_id: AnyUserOfAgent = None


class MemoryForget(ForgetQuery):
    """One memory to delete, by id: of tenant (agent_id, user_id), or without user_id
    (memex's call) of whichever user of the agent it is, if the caller may see it."""

    memory_id: MemoryId


class _JsonQuery(TenantQuery):
    # Query parameters whose value is JSON text (the OpenAPI document says so).
    json_fields: ClassVar[frozenset[str]] = frozenset({"metadata"})


class CountQuery(_JsonQuery):
    """Query string of GET /v1/memories/count."""

    memory_type: MemoryTypeFilter = None
    metadata: MetadataQuery = None


class ListQuery(_JsonQuery):
    """Query string of GET /v1/memories: a page of a tenant's memories, newest first."""

    limit: ListLimit = DEFAULT_LIST_LIMIT
    cursor: Cursor = None
    memory_type: MemoryTypeFilter = None
    created_after: Annotated[
        QueryTimestamp,
        Field(
            description="Only memories created at or after this (ISO 8601).",
            examples=["2000-01-01T00:00:00Z"],
        ),
    ] = None
    created_before: Annotated[
        QueryTimestamp,
        Field(
            description="Only memories created before this (ISO 8601).",
            examples=["2100-01-01T00:00:00Z"],
        ),
    ] = None
    metadata: MetadataQuery = None
    include_archived: IncludeArchivedQuery = False


class ExportQuery(_Request):
    """Query string of GET /v1/export: an agent's memories, or one user's."""

    agent_id: AgentId
    user_id: Annotated[
        UserId | None, Field(description="Only this user's memories (default: every user's).")
    ] = None
    embeddings: Annotated[
        bool, Field(description="Include each memory's embedding (384 numbers by default).")
    ] = False


_PATCH_FIELDS = ("content", "importance", "metadata", "memory_type", "expires_at")


def _patch_schema(schema: dict[str, Any]) -> None:
    # At least one field to change; only expires_at may be null (null removes the expiry).
    schema["anyOf"] = [{"required": [f]} for f in _PATCH_FIELDS]
    schema["examples"] = [{"agent_id": EXAMPLE_AGENT, "user_id": EXAMPLE_USER, "importance": 1.5}]
    for name in _PATCH_FIELDS[:-1]:
        prop = schema["properties"][name]
        options = [o for o in prop.pop("anyOf") if o != {"type": "null"}]
        prop.pop("default", None)
        prop.update(options[0])


class MemoryPatch(_Request):
    """The fields of a memory to change: at least one; a field left out keeps its value.
    `expires_at: null` removes the expiry; a new `content` is embedded again."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_patch_schema)

    agent_id: AgentId
    user_id: UserId
    content: Content | None = None
    importance: Importance | None = None
    metadata: Annotated[
        Metadata, Field(description="Replaces the whole metadata object (at most 64 KiB as JSON).")
    ] = None
    memory_type: Kind | None = None
    expires_at: Annotated[
        FutureTimestamp,
        Field(description="A new expiry, in the future (UTC if naive); null removes it."),
    ] = None

    @model_validator(mode="after")
    def _changes_something(self) -> MemoryPatch:
        given = self.model_fields_set & set(_PATCH_FIELDS)
        if not given:
            raise ValueError(f"must change at least one of {', '.join(_PATCH_FIELDS)}")
        for name in given - {"expires_at"}:
            if getattr(self, name) is None:
                raise ValueError(f"{name} may not be null (leave it out to keep it)")
        return self

    @property
    def clear_expires_at(self) -> bool:
        return "expires_at" in self.model_fields_set and self.expires_at is None


class MemoryUpdate(MemoryPatch):
    """A MemoryPatch of one memory, by id (in REST: the patch in the body, the id in the
    path)."""

    memory_id: MemoryId


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
    updated_at: datetime | None = Field(default=None, description="last change")
    expires_at: datetime | None = None
    embedding_model: str | None = Field(
        default=None, description="the model of its embedding (null: not embedded yet)"
    )
    score: float | None = Field(default=None, description="null here; set in search results")
    source_ids: list[UUID] = Field(
        default_factory=list, description="a summary's sources (consolidation); else empty"
    )
    superseded_by: UUID | None = Field(
        default=None, description="the summary that replaced this archived memory"
    )
    archived_at: datetime | None = Field(
        default=None, description="when consolidation archived it (null: live)"
    )


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


class MemoryPage(BaseModel):
    """A page of memories, newest first; pass next_cursor as `cursor` for the next one
    (null: this page is the last; a full page may be followed by an empty one)."""

    memories: list[MemoryOut]
    next_cursor: str | None


class ErasedResponse(BaseModel):
    """Everything of tenant (agent_id, user_id) deleted: rows per table."""

    agent_id: str
    user_id: str
    deleted: dict[str, int]


class ExportedMemory(BaseModel):
    """One line of an export (JSON Lines): every field of a memory, the embedding optional."""

    model_config = ConfigDict(extra="forbid")

    # what the line holds (memexdb.export_format); exports before version 2 leave it out
    record: Literal["memory"] = "memory"
    id: UUID
    agent_id: AgentId
    user_id: UserId
    memory_type: Kind = DEFAULT_MEMORY_TYPE
    content: Content
    importance: Importance = DEFAULT_IMPORTANCE
    metadata: Metadata = None
    created_at: QueryTimestamp = None
    updated_at: QueryTimestamp = None
    expires_at: QueryTimestamp = None
    embedding_model: str | None = None
    embedding: list[float] | None = None
    # consolidation's lineage (memex.consolidate_tenant): a summary's sources; an archived
    # memory's summary and archive time
    source_ids: list[UUID] = Field(default_factory=list, max_length=1000)
    superseded_by: UUID | None = None
    archived_at: QueryTimestamp = None
    # a file: its virtual path (memex._check_path checks it); who wrote the memory. Both
    # are history: importing them needs admin access to the tenant.
    path: Annotated[str | None, Field(min_length=1, max_length=512), AfterValidator(no_nul)] = None
    actor: Annotated[str | None, Field(min_length=1, max_length=200), AfterValidator(no_nul)] = None

    def lineage(self) -> dict[str, Any] | None:
        """What memex.import_memories takes as this memory's p_lineage item."""
        if not self.source_ids and self.archived_at is None:
            return None
        return {
            "source_ids": [str(i) for i in self.source_ids],
            "superseded_by": str(self.superseded_by) if self.superseded_by else None,
            "archived_at": self.archived_at.isoformat() if self.archived_at else None,
        }


class Deleted(BaseModel):
    """The memory that was deleted."""

    deleted: MemoryOut


class HealthResponse(BaseModel):
    status: str
    db: str
    version: str


class LiveResponse(BaseModel):
    """GET /health/live: the process serves requests (nothing else is checked)."""

    status: Literal["ok"]
    version: str
    pid: int


# database_unavailable (down, or its embedded server being restarted), migrating (a
# migration holds its lock), schema_behind (not migrated to this release yet)
NotReady = Literal["database_unavailable", "migrating", "schema_behind"]


class BlockedLock(BaseModel):
    """A session waiting now for a lock on one of memexdb's tables (memex.lock_waits)."""

    pid: int
    role: str | None = Field(None, description="its role (null when not visible)")
    relation: str = Field(description="the memex table it waits for")
    mode: str = Field(description="the lock mode it asked for, e.g. AccessExclusiveLock")
    waiting_seconds: float | None = None
    blocked_by: list[int] = Field(description="the pids holding or ahead of the lock")
    blocker_roles: list[str]


class ReadyResponse(BaseModel):
    """GET /health/ready: whether this process should get traffic, and if not why;
    `blocked` lists the sessions waiting for a lock on a memex table (a migration behind
    an idle transaction, requests behind a migration) and who blocks them."""

    status: Literal["ok", "unavailable"]
    reason: NotReady | None = None
    message: str | None = None
    version: str
    blocked: list[BlockedLock] = Field(default_factory=list)


class FieldError(BaseModel):
    field: str
    message: str


class ErrorBody(BaseModel):
    code: str = Field(
        description="invalid_argument | unauthenticated | forbidden | not_found | conflict"
        " | rate_limited | database_unavailable | busy | payload_too_large"
        " | method_not_allowed | host_not_allowed | origin_not_allowed | internal_error"
        " | model_not_found (POST /v1/embeddings)"
    )
    message: str
    fields: list[FieldError] = Field(default_factory=list)
    retry_after_seconds: float | None = None


class ErrorResponse(BaseModel):
    error: ErrorBody


# OpenAI's error object (`type`, `param`) of what the OpenAI-compatible endpoints answer
# (POST /v1/embeddings; memexdb.rest.errors.OpenAIErrors adds both fields to every error
# reply there), beside the service's own fields, which memexdb's clients read.
class OpenAIErrorBody(ErrorBody):
    type: str = Field(
        description="OpenAI's error type: invalid_request_error (400 to 422),"
        " authentication_error (401), permission_error (403), rate_limit_error (429),"
        " server_error (5xx)."
    )
    param: str | None = Field(
        description="The request field at fault (the first of `fields`), as OpenAI's `param`;"
        " null when no one field is."
    )


class OpenAIErrorResponse(BaseModel):
    error: OpenAIErrorBody


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


# --- Embeddings: POST /v1/embeddings (OpenAI's API) and `memexdb reembed` ---

EMBEDDINGS_MAX_INPUTS = 2048  # texts per request, as OpenAI allows
# Each text: a search query's bound (any query memexdb searches with can be embedded as
# it does). A memory's 32768 would let a list of one item more than allowed pass the
# 16 MiB body limit: a 413 where a 422 names the field.
EMBEDDING_INPUT_MAX_CHARS = QUERY_MAX_CHARS
# All texts of one request: ~240 full windows of the bundled model, tens of seconds of a
# 2-core machine at worst (the schema cannot say this one; the 422 names `input`).
EMBEDDINGS_MAX_TOTAL_CHARS = 262_144
EMBEDDING_USER_MAX_CHARS = 256
DEFAULT_REEMBED_BATCH = 64  # memories per page of memex.stale_embeddings (its default)
REEMBED_BATCH_MAX = 1000

EmbeddingText = Annotated[
    str,
    _text(
        EMBEDDING_INPUT_MAX_CHARS,
        "A text to embed (not only whitespace). A text longer than the model's window is"
        " embedded in full: the mean of its chunks' vectors.",
        EXAMPLE_CONTENT,
    ),
    _NotBlank,
]


def _one_or_many(value: Any) -> Any:
    # OpenAI's `input` is a text or a list of texts; a text is a list of one here, so that
    # a bad text is named input[i] either way.
    return [value] if isinstance(value, str) else value


def _total_chars(value: list[str]) -> list[str]:
    if sum(len(text) for text in value) > EMBEDDINGS_MAX_TOTAL_CHARS:
        raise ValueError(f"must hold at most {EMBEDDINGS_MAX_TOTAL_CHARS} characters in all")
    return value


_EMBEDDING_TEXT_SCHEMA = TypeAdapter(EmbeddingText).json_schema()
_EMBEDDING_INPUT_DESCRIPTION = (
    f"A text, or a list of 1 to {EMBEDDINGS_MAX_INPUTS} texts, each 1 to"
    f" {EMBEDDING_INPUT_MAX_CHARS} characters, at most {EMBEDDINGS_MAX_TOTAL_CHARS} in all"
    " (token arrays are not accepted)."
)


class EmbeddingRequest(_Request):
    """OpenAI's embeddings request: one text or a list of texts, embedded by the service's
    model."""

    input: Annotated[
        list[EmbeddingText],
        Field(min_length=1, max_length=EMBEDDINGS_MAX_INPUTS),
        BeforeValidator(_one_or_many),
        AfterValidator(_total_chars),
        WithJsonSchema(
            {
                "anyOf": [
                    _EMBEDDING_TEXT_SCHEMA,
                    {
                        "type": "array",
                        "items": _EMBEDDING_TEXT_SCHEMA,
                        "minItems": 1,
                        "maxItems": EMBEDDINGS_MAX_INPUTS,
                    },
                ],
                "description": _EMBEDDING_INPUT_DESCRIPTION,
            }
        ),
    ]
    model: Annotated[
        str | None,
        Field(
            description="The service's embedding model (MEMEX_EMBEDDER), as `model` of any"
            " answer names it; omit it for the same. Any other model is refused: its"
            " vectors would not be comparable with the stored ones."
        ),
    ] = None
    encoding_format: Annotated[
        Literal["float", "base64"],
        Field(
            description="float: lists of numbers; base64: each vector's float32"
            " little-endian bytes, base64-encoded (what OpenAI's clients ask for by default)."
        ),
    ] = "float"
    user: Annotated[
        str | None,
        Field(
            max_length=EMBEDDING_USER_MAX_CHARS,
            description="OpenAI's end-user id; accepted and ignored.",
            json_schema_extra={"pattern": _NO_NUL},
        ),
        _NoNul,
    ] = None
    dimensions: Annotated[
        int | None,
        Strict(),
        Field(
            ge=1,
            description="The model's own vector size (384 for the bundled model), or left"
            " out: vectors are never shortened, so any other size is refused (a 422 naming"
            " `dimensions`).",
        ),
    ] = None


def served_model(document_schemas: dict[str, Any], model_id: str, dimensions: int) -> None:
    """Say in an OpenAPI document's schemas which `model` and `dimensions`
    EmbeddingRequest accepts: the service's own (known once its embedder is loaded)."""
    schema = document_schemas.get(EmbeddingRequest.__name__)
    if schema is None:
        return
    for name, value in (("model", model_id), ("dimensions", dimensions)):
        described = schema["properties"][name]
        kind = "string" if name == "model" else "integer"
        schema["properties"][name] = {
            "anyOf": [{"type": kind, "enum": [value]}, {"type": "null"}],
            **{k: v for k, v in described.items() if k != "anyOf"},
        }


class EmbeddingOut(BaseModel):
    object: Literal["embedding"] = "embedding"
    index: int = Field(description="The position of the text in `input`.")
    embedding: list[float] | str = Field(
        description="A unit vector: numbers, or base64 of float32 little-endian bytes."
    )


class EmbeddingUsage(BaseModel):
    prompt_tokens: int = Field(description="The texts' tokens, as the model's tokenizer counts.")
    total_tokens: int


class EmbeddingsOut(BaseModel):
    """OpenAI's embeddings answer: one vector per text, in input order."""

    object: Literal["list"] = "list"
    data: list[EmbeddingOut]
    model: str
    usage: EmbeddingUsage


# --- API keys and the audit log (memex.create_key, list_keys, revoke_key, audit_events) ---

KEY_NAME_MAX_CHARS = 200
KEY_USERS_MAX = 1000
AUDIT_LIMIT_MAX = 1000
DEFAULT_AUDIT_LIMIT = 100

KeyAccess = Annotated[Access, _enum(Access, Access.__doc__ or "")]
CONFIRM_LAST_KEY = Field(
    description="Revoke the key even if it is the last live key of this admin's scope (of "
    "the database for an operator): without it that is a 409. A database that has had keys "
    "stays closed to requests without one once they are all revoked or expired."
)
KeyName = Annotated[
    str,
    Field(
        max_length=KEY_NAME_MAX_CHARS,
        description="A label for people (who holds the key).",
        json_schema_extra={"pattern": _NO_NUL},
    ),
    _NoNul,
]


# A key limited to users names their agent (memex.create_key): said in the schema too.
_USERS_NEED_AGENT: JsonDict = {
    "if": {"required": ["user_ids"], "properties": {"user_ids": {"type": "array"}}},
    "then": {"required": ["agent_id"], "properties": {"agent_id": {"type": "string"}}},
}


class KeyCreate(_Request):
    """A key to create: its access and scope. The token comes back once."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            **_USERS_NEED_AGENT,
            "examples": [{"access": "write", "agent_id": EXAMPLE_AGENT, "name": "demo app"}],
        },
    )

    access: KeyAccess
    agent_id: Annotated[
        AgentId | None,
        Field(description="The agent the key may act for; omit for every agent (operator keys)."),
    ] = None
    user_ids: Annotated[
        list[UserId] | None,
        Field(
            min_length=1,
            max_length=KEY_USERS_MAX,
            description="Only these users of the agent (default: all of them).",
        ),
    ] = None
    name: KeyName = ""
    expires_at: Annotated[
        Timestamp, Field(description="The key stops working at this time (UTC if naive).")
    ] = None

    @field_validator("user_ids")
    @classmethod
    def _users_need_agent(cls, value: list[str] | None, info: ValidationInfo) -> list[str] | None:
        if value is not None and info.data.get("agent_id") is None:
            raise ValueError("a key limited to users must name its agent")
        return value


class KeysQuery(_Request):
    """Query string of GET /v1/admin/keys."""

    agent_id: Annotated[AgentId | None, Field(description="Only this agent's keys.")] = None


class KeyRef(_Request):
    """A key to revoke (DELETE /v1/admin/keys/{key})."""

    key: Annotated[
        str,
        Field(
            min_length=1,
            description="The key's id (a UUID) or its prefix: the 12 hex digits after `mxk_`"
            " in its token, as the key list shows them (the example is such a prefix).",
            examples=["0123456789ab"],
        ),
        _NoNul,
    ]
    confirm_last: Annotated[bool, CONFIRM_LAST_KEY] = False


class KeyRevokeQuery(_Request):
    """Query string of DELETE /v1/admin/keys/{key}."""

    confirm_last: Annotated[bool, CONFIRM_LAST_KEY] = False


class AuditQuery(_Request):
    """Query string of GET /v1/admin/audit."""

    limit: Annotated[
        int,
        Field(ge=1, le=AUDIT_LIMIT_MAX, description=f"Entries per page (1 to {AUDIT_LIMIT_MAX})."),
        Strict(),
        BeforeValidator(_query_integer),
    ] = DEFAULT_AUDIT_LIMIT
    before: Annotated[
        int | None,
        Field(
            ge=1,
            le=2**63 - 1,
            description="Entries older than this id (the next page).",
            examples=[2**63 - 1],  # older than every entry: the first page
        ),
        Strict(),
        BeforeValidator(_query_integer),
    ] = None


class _Out(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class _KeyScopeOut(_Out):
    id: UUID
    prefix: str = Field(description="Identifies the key in lists and logs (not a secret).")
    name: str
    agent_id: str | None
    user_ids: list[str] | None
    access: Access
    created_at: datetime
    expires_at: datetime | None


class KeyCreatedOut(_KeyScopeOut):
    """The new key. `token` is the secret, shown this once: store it now."""

    token: str


class KeyOut(_KeyScopeOut):
    """An API key (never its secret)."""

    created_by: str
    revoked_at: datetime | None
    last_used_at: datetime | None


class KeyList(BaseModel):
    keys: list[KeyOut]


class KeyRevokedOut(_Out):
    id: UUID
    prefix: str
    agent_id: str | None
    access: Access
    revoked_at: datetime


class AuditEventOut(_Out):
    id: int
    at: datetime
    actor: str
    action: str
    agent_id: str | None
    user_id: str | None
    details: dict[str, Any]


class AuditList(BaseModel):
    events: list[AuditEventOut]
    next_before: int | None = Field(description="Pass as `before` for older entries.")


# --- File memory (memex.write_file, read_file, list_files, patch_file, ...) ---

# Bounds (sql/: memex._check_path, memex.read_file, memex.smart_read).
PATH_MAX_CHARS = 512
PATH_MAX_SEGMENTS = 16
PATH_SEGMENT_MAX_CHARS = 128
LINE_MAX = 1_000_000
SMART_READ_MIN_BUDGET = 100
SMART_READ_MAX_BUDGET = 100_000
DEFAULT_SMART_READ_BUDGET = 4000
DEFAULT_FILE_LIST_LIMIT = 50
DEFAULT_ACCESS_LOG_LIMIT = 100
FILE_PREFIXES = ("user", "agent")
HEADING_MAX_CHARS = 200
# one line: optional 1-6 '#' and spaces, then text (as memex._apply_patch checks it)
_HEADING = r"^(#{1,6} +)?[^\s#\x00][^\n\r\x00]*$"

_SEGMENT = r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}"
_PATH = rf"^(user|agent)(/{_SEGMENT}){{1,{PATH_MAX_SEGMENTS - 1}}}$"


def _check_path(value: str) -> str:
    # The same rule as memex._check_path, with its messages.
    if not 1 <= len(value) <= PATH_MAX_CHARS:
        raise ValueError(f"must be 1 to {PATH_MAX_CHARS} characters")
    if value.startswith("/"):
        raise ValueError("must be relative (no leading /)")
    segments = value.split("/")
    if segments[0] not in FILE_PREFIXES:
        raise ValueError("must start with user/ or agent/")
    if not 2 <= len(segments) <= PATH_MAX_SEGMENTS:
        raise ValueError(f"must have 2 to {PATH_MAX_SEGMENTS} segments (user/<name> at least)")
    for segment in segments:
        if segment == "":
            raise ValueError("must not have empty segments (// or a trailing /)")
        if segment in (".", ".."):
            raise ValueError("must not contain . or .. segments")
        if segment.startswith("."):
            raise ValueError("must not have hidden segments (starting with .)")
        if len(segment) > PATH_SEGMENT_MAX_CHARS:
            raise ValueError(f"segments must be at most {PATH_SEGMENT_MAX_CHARS} characters")
        if not re.fullmatch(r"[A-Za-z0-9._-]+", segment):
            raise ValueError("segments may only hold A-Z a-z 0-9 . _ -")
    return value


FilePath = Annotated[
    str,
    Field(
        min_length=1,
        max_length=PATH_MAX_CHARS,
        description="A virtual path: user/<...> (the user's files) or agent/<...> (the agent's"
        " notes for this user), 2 to 16 segments of A-Z a-z 0-9 . _ - (not starting with a"
        " dot), e.g. user/profile.md.",
        examples=[EXAMPLE_PATH],
        json_schema_extra={"pattern": _PATH},
    ),
    AfterValidator(_check_path),
]
PathPrefix = Annotated[
    str | None,
    Field(
        max_length=PATH_MAX_CHARS,
        description="Only files whose path starts with this (e.g. user/ or agent/notes/).",
        examples=["user/"],
        json_schema_extra={"pattern": "^[A-Za-z0-9._/-]*$"},
    ),
    # Postgres text cannot hold NUL: a 422 here, not the driver's error (a 500)
    _NoNul,
]
FileContent = Annotated[
    str,
    _text(
        CONTENT_MAX_CHARS,
        f"The whole file (1 to {CONTENT_MAX_CHARS} characters, not blank).",
        "# Alice\n\n## Preferences\n\n- green tea, no sugar\n",
    ),
    _NotBlank,
]
BaseRevision = Annotated[
    int | None,
    Field(
        ge=0,
        le=2**31 - 1,
        description="The revision your change is based on (0: the file must not exist yet);"
        " refused with 409 if the file has moved on. Omit to overwrite whatever is there.",
        examples=[1],
    ),
    Strict(),
    BeforeValidator(_integral),
]
Revision = Annotated[
    int,
    Field(
        ge=1,
        le=2**31 - 1,
        description="A revision number of the file (1 = the first write).",
        examples=[1],
    ),
    Strict(),
    BeforeValidator(_query_integer),
]
LineNumber = Annotated[
    int | None,
    Field(ge=1, le=LINE_MAX, description="A line number (1-based, inclusive).", examples=[1]),
    Strict(),
    BeforeValidator(_query_integer),
]
Budget = Annotated[
    int,
    Field(
        ge=SMART_READ_MIN_BUDGET,
        le=SMART_READ_MAX_BUDGET,
        description=f"Most characters the context block may hold ({SMART_READ_MIN_BUDGET} to"
        f" {SMART_READ_MAX_BUDGET}).",
    ),
    Strict(),
    BeforeValidator(_integral),
]
PageLimit = Annotated[
    int,
    Field(ge=1, le=LIST_LIMIT_MAX, description=f"Entries per page (1 to {LIST_LIMIT_MAX})."),
    Strict(),
    BeforeValidator(_query_integer),
]


def _one_patch(model: FilePatch) -> FilePatch:
    for name in model.model_fields_set & {"heading", "append", "old_text", "new_text"}:
        if getattr(model, name) is None:
            raise ValueError(f"{name} may not be null (leave it out)")
    if (model.append is None) == (model.old_text is None):
        raise ValueError("give either append (with an optional heading) or old_text and new_text")
    if model.old_text is not None and model.new_text is None:
        raise ValueError("new_text is required with old_text")
    if model.old_text is None and (model.new_text is not None):
        raise ValueError("new_text is only for replacing old_text")
    if model.old_text is not None and model.heading is not None:
        raise ValueError("heading is only for append")
    return model


class FileWrite(_Request):
    """Create or overwrite a file (its content is embedded, so search ranks it)."""

    agent_id: AgentId
    user_id: UserId
    path: FilePath
    content: FileContent
    base_revision: BaseRevision = None


_PATCH_FORMS = {"append": ["append"], "replace": ["old_text", "new_text"]}


def _file_patch_schema(schema: dict[str, Any]) -> None:
    schema["examples"] = [
        {
            "agent_id": EXAMPLE_AGENT,
            "user_id": EXAMPLE_USER,
            "path": EXAMPLE_PATH,
            "heading": "## Preferences",
            "append": "- oat milk",
        }
    ]
    # Exactly one form: append (with an optional heading) or old_text + new_text. The text
    # fields may be left out but not null (null is what "left out" means to Python).
    schema["oneOf"] = [
        {
            "required": ["append"],
            "not": {"anyOf": [{"required": ["old_text"]}, {"required": ["new_text"]}]},
        },
        {
            "required": ["old_text", "new_text"],
            "not": {"anyOf": [{"required": ["append"]}, {"required": ["heading"]}]},
        },
    ]
    for name in ("heading", "append", "old_text", "new_text"):
        prop = schema["properties"][name]
        options = [o for o in prop.pop("anyOf") if o != {"type": "null"}]
        prop.pop("default", None)
        prop.update(options[0])


class FilePatch(_Request):
    """Append under a markdown heading (created if absent), or replace one exact text."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra=_file_patch_schema,
    )

    agent_id: AgentId
    user_id: UserId
    path: FilePath
    heading: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=HEADING_MAX_CHARS,
            pattern=_HEADING,
            description="The heading to append under, e.g. '## Preferences' (no '#': level 2);"
            " added at the end of the file if absent. Omit to append at the end.",
        ),
    ] = None
    append: Annotated[
        str | None,
        _text(CONTENT_MAX_CHARS, "Text to append (not only whitespace).", "- oat milk"),
        _NotBlank,
    ] = None
    old_text: Annotated[
        str | None,
        _text(
            CONTENT_MAX_CHARS,
            "Exact text to replace: must occur exactly once.",
            "no sugar",
            blank=True,
        ),
        _NoNul,
    ] = None
    new_text: Annotated[
        str | None,
        Field(
            max_length=CONTENT_MAX_CHARS,
            description="What old_text becomes.",
            json_schema_extra={"pattern": _NO_NUL},
        ),
        _NoNul,
    ] = None
    base_revision: BaseRevision = None

    _check = model_validator(mode="after")(_one_patch)


class FileQuery(TenantQuery):
    """Query string naming one file."""

    path: FilePath


class FileReadQuery(FileQuery):
    """Query string of GET /v1/files/read."""

    from_line: LineNumber = None
    to_line: LineNumber = None
    as_of: Annotated[
        QueryTimestamp,
        Field(
            description="The file as it was at this time (ISO 8601).",
            examples=["2100-01-01T00:00:00Z"],  # later than every revision: the current one
        ),
    ] = None

    @field_validator("to_line")
    @classmethod
    def _not_before_from_line(cls, value: int | None, info: ValidationInfo) -> int | None:
        first = info.data.get("from_line")
        if value is not None and first is not None and value < first:
            raise ValueError(f"must be at least from_line ({first})")
        return value


class FileDeleteQuery(FileQuery):
    """Query string of DELETE /v1/files."""

    base_revision: Annotated[BaseRevision, BeforeValidator(_query_integer)] = None


class FileListQuery(TenantQuery):
    """Query string of GET /v1/files: a page of files in path order."""

    prefix: PathPrefix = None
    limit: PageLimit = DEFAULT_FILE_LIST_LIMIT
    after: Annotated[
        FilePath | None,
        Field(
            description="The last path of the previous page.",
            examples=["agent/-"],  # before every path: the first page
        ),
    ] = None


class RevisionListQuery(FileQuery):
    """Query string of GET /v1/files/revisions."""

    limit: PageLimit = DEFAULT_FILE_LIST_LIMIT
    before: Annotated[
        int | None,
        Field(
            ge=1,
            le=2**31 - 1,
            description="Revisions older than this one (the next page).",
            examples=[2**31 - 1],  # older than every revision: the first page
        ),
        Strict(),
        BeforeValidator(_query_integer),
    ] = None


class RevisionQuery(FileQuery):
    """Query string of GET /v1/files/revision."""

    revision: Revision


class DiffQuery(FileQuery):
    """Query string of GET /v1/files/diff."""

    from_revision: Revision
    to_revision: Revision


class RestoreRequest(_Request):
    """Make an earlier revision current again (a new revision)."""

    agent_id: AgentId
    user_id: UserId
    path: FilePath
    revision: Annotated[
        int, Field(ge=1, le=2**31 - 1, examples=[1]), Strict(), BeforeValidator(_integral)
    ]
    base_revision: BaseRevision = None


class SmartReadRequest(_Request):
    """One bounded context block from the most relevant files and memories."""

    agent_id: AgentId
    user_id: UserId
    query: Query
    budget: Budget = DEFAULT_SMART_READ_BUDGET


class AccessLogQuery(TenantQuery):
    """Query string of GET /v1/access-log."""

    since: Annotated[
        QueryTimestamp,
        Field(description="Entries at or after this time.", examples=["2000-01-01T00:00:00Z"]),
    ] = None
    until: Annotated[
        QueryTimestamp,
        Field(description="Entries before this time.", examples=["2100-01-01T00:00:00Z"]),
    ] = None
    limit: PageLimit = DEFAULT_ACCESS_LOG_LIMIT
    before: Annotated[
        int | None,
        Field(
            ge=1,
            le=2**63 - 1,
            description="Entries older than this id (the next page).",
            examples=[2**63 - 1],  # older than every entry: the first page
        ),
        Strict(),
        BeforeValidator(_query_integer),
    ] = None


class FileOut(_Out):
    """A file (its content, or the lines asked for) at its current revision."""

    path: str
    memory_id: UUID = Field(description="The file is a memory: search returns this id.")
    revision: int
    size: int = Field(description="characters of the whole file")
    line_count: int
    from_line: int
    to_line: int
    content: str
    created_at: datetime
    updated_at: datetime
    actor: str | None


class FileEntryOut(_Out):
    path: str
    memory_id: UUID
    revision: int | None
    size: int
    created_at: datetime
    updated_at: datetime


class FileList(BaseModel):
    """A page of files in path order; pass next_after as `after` (null: the last page)."""

    files: list[FileEntryOut]
    next_after: str | None


class RevisionOut(_Out):
    id: int = Field(description="The revision's row id (every file's revisions count from 1)")
    agent_id: str
    user_id: str
    path: str
    revision: int
    operation: str = Field(description="write | patch | delete | restore")
    actor: str
    at: datetime
    size: int
    memory_id: UUID | None
    details: dict[str, Any]
    content: str | None = Field(description="null in lists and for a delete")


class RevisionList(BaseModel):
    revisions: list[RevisionOut]
    next_before: int | None


class DiffOut(BaseModel):
    """A unified diff of two revisions of a file (memex.diff_revisions, as difflib writes it)."""

    path: str
    from_revision: int
    to_revision: int
    diff: str


class SmartReadOut(_Out):
    context: str
    chars: int
    budget: int
    sources: list[dict[str, Any]]


class AccessEventOut(_Out):
    id: int
    at: datetime
    agent_id: str
    user_id: str
    actor: str
    operation: str
    target: str | None
    details: dict[str, Any]


class AccessLog(BaseModel):
    events: list[AccessEventOut]
    next_before: int | None


# --- Agentic tools: memory_search (memex.search_passages) and memory_memorize ---

# Bounds (sql/files/103_search_passages.sql checks the same).
PASSAGES_TOP_K_MAX = 50
DEFAULT_PASSAGES_TOP_K = 8
PASSAGE_MIN_CHARS = 100
PASSAGE_MAX_CHARS = 8000
DEFAULT_PASSAGE_CHARS = 800
# memorize: the text taken (the fallback stores it as one memory), and what the inner
# model may propose per call.
MEMORIZE_TEXT_MAX_CHARS = 16_000
MEMORIZE_MAX_PROPOSALS = 8
MEMORIZE_PROPOSAL_MAX_CHARS = 8000
# what the inner model is shown: the most relevant files and memories, and file names
MEMORIZE_CONTEXT_CHARS = 6000
MEMORIZE_FILE_LIST = 100
# dreaming with an LLM: the files shown to the model per tenant (in path order, while they
# fit), and the edits taken from its answer (sql/129 takes at most 200 per call)
DREAM_LLM_CONTEXT_CHARS = 24_000
DREAM_MAX_EDITS = 8  # every change a model proposes in one dream, of every kind
# merging duplicate or paraphrased facts, rewriting a fragmented section (with an LLM)
DREAM_MERGE_MAX_FACTS = 8
DREAM_REWRITE_MAX_CHARS = 4000


PassageTopK = Annotated[
    int,
    Field(
        ge=1,
        le=PASSAGES_TOP_K_MAX,
        description=f"How many passages to return (1 to {PASSAGES_TOP_K_MAX}).",
    ),
    Strict(),
    BeforeValidator(_integral),
]
PassageChars = Annotated[
    int,
    Field(
        ge=PASSAGE_MIN_CHARS,
        le=PASSAGE_MAX_CHARS,
        description=f"Most characters per passage ({PASSAGE_MIN_CHARS} to"
        f" {PASSAGE_MAX_CHARS}); longer ones are cut, ending in '…'.",
    ),
    Strict(),
    BeforeValidator(_integral),
]
AnswerWanted = Annotated[
    bool,
    Field(
        description="Also ask the configured LLM for an answer that cites the passages"
        " it used ([1], [2], ...). Without an LLM the passages come back alone."
    ),
    Strict(),
]


class PassageSearchRequest(_Request):
    """memory_search: passages of files and memories for a query, optionally answered."""

    agent_id: AgentId
    user_id: UserId
    query: Query
    top_k: PassageTopK = DEFAULT_PASSAGES_TOP_K
    passage_chars: PassageChars = DEFAULT_PASSAGE_CHARS
    answer: AnswerWanted = False


class PassageOut(_Out):
    rank: int = Field(description="1 = the most relevant; answers cite passages as [rank].")
    path: str | None = Field(description="The file's virtual path; null for a memory.")
    memory_id: UUID
    from_line: int | None = Field(description="First line of the passage in the file.")
    to_line: int | None
    passage: str
    score: float
    truncated: bool


LLMStatus = Literal["not_asked", "not_configured", "answered", "failed"]


class PassageSearchOut(BaseModel):
    """Passages best first; with `answer`, the LLM's answer and the ranks it cited."""

    passages: list[PassageOut]
    answer: str | None
    cited: list[int] = Field(description="Ranks of the passages the answer cites.")
    llm: LLMStatus = Field(
        description="not_asked (answer was false), not_configured (no MEMEX_LLM_URL),"
        " answered, or failed (see llm_error; the passages are still here)."
    )
    llm_error: str | None = None


MemorizeText = Annotated[
    str,
    _text(
        MEMORIZE_TEXT_MAX_CHARS,
        f"The raw text to memorize (1 to {MEMORIZE_TEXT_MAX_CHARS} characters, not blank).",
        "Alice: I switched from coffee to green tea last month, and I take it without sugar.",
    ),
    _NotBlank,
]


class MemorizeRequest(_Request):
    """memory_memorize: raw text (a conversation turn, a note) to keep what is durable."""

    agent_id: AgentId
    user_id: UserId
    text: MemorizeText


ProposalText = Annotated[
    str,
    Field(min_length=1, max_length=MEMORIZE_PROPOSAL_MAX_CHARS),
    _NotBlank,
]


class ProposedWrite(_Request):
    """A memory_write the inner model proposes (the tenant is the caller's, never its)."""

    path: FilePath
    content: ProposalText


class ProposedPatch(_Request):
    """A memory_patch the inner model proposes: append under a heading, or replace."""

    path: FilePath
    heading: Annotated[str, Field(max_length=HEADING_MAX_CHARS)] | None = None
    append: ProposalText | None = None
    old_text: ProposalText | None = None
    new_text: Annotated[str, Field(max_length=MEMORIZE_PROPOSAL_MAX_CHARS)] | None = None


class ProposedEdit(_Request):
    """An edit the dreaming model proposes to resolve a contradiction in a file it was
    shown: the one occurrence of old_text becomes new_text (empty: removed)."""

    path: FilePath
    old_text: ProposalText
    new_text: Annotated[str, Field(max_length=MEMORIZE_PROPOSAL_MAX_CHARS)]
    reason: Annotated[str, Field(max_length=300)] = ""


class ProposedMerge(_Request):
    """Facts the dreaming model proposes to merge in a file it was shown: each fact (an
    exact text occurring once in the file) goes, and `merged` takes the place of the last
    of them; never longer than the facts together, keeping every name and number."""

    path: FilePath
    facts: Annotated[
        list[ProposalText],
        Field(
            min_length=2,
            max_length=DREAM_MERGE_MAX_FACTS,
            description="The duplicate or paraphrased facts, each copied exactly.",
        ),
    ]
    merged: ProposalText
    reason: Annotated[str, Field(max_length=300)] = ""


class ProposedRewrite(_Request):
    """A fragmented section the dreaming model proposes to rewrite in a file it was shown:
    old_text (exact, once in the file) becomes new_text, no longer than it, keeping every
    name and number."""

    path: FilePath
    old_text: Annotated[str, Field(min_length=1, max_length=DREAM_REWRITE_MAX_CHARS), _NotBlank]
    new_text: Annotated[str, Field(min_length=1, max_length=DREAM_REWRITE_MAX_CHARS), _NotBlank]
    reason: Annotated[str, Field(max_length=300)] = ""


class MemorizeChange(BaseModel):
    tool: str = Field(description="memory_write, memory_patch or store_memory")
    path: str | None
    memory_id: UUID
    revision: int | None


class MemorizeRefusal(BaseModel):
    tool: str
    arguments: str = Field(description="The proposal as the model sent it (first 500 chars).")
    reason: str


class MemorizeOut(BaseModel):
    """What memorize did: which path ran, what it wrote, what it refused."""

    mode: Literal["llm", "fallback"] = Field(
        description="llm: the configured model proposed the changes; fallback: no LLM (or it"
        " failed): the text was stored as one episodic memory (its one home: a search"
        " finds it once)."
    )
    applied: list[MemorizeChange]
    refused: list[MemorizeRefusal]
    llm_error: str | None = None


# --- Consolidation ("dreaming"): memex.consolidate_*, memex.dream_* ---

# memex.set_dream_config checks the same bounds (tests/test_params.py keeps them in step).
DREAM_BOUNDS: dict[str, tuple[int, int]] = {
    "interval_seconds": (10, 86400),
    "grace_minutes": (0, 10080),
    "threshold": (10, 100_000),
    "batch_size": (2, 1000),
    "summary_chars": (200, 32000),
    "write_budget": (1, 1000),
    "concurrency": (1, 64),
}
RUNS_LIMIT_MAX = 1000
DEFAULT_RUNS_LIMIT = 100


class DreamConfig(_Request):
    """Consolidation settings to change (PUT /v1/admin/dream/config): any of them."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"grace_minutes": 60}]}
    )

    enabled: Annotated[
        bool | None,
        Field(
            description="Master switch of every consolidation job (pg_cron's and the service's)."
        ),
        Strict(),
    ] = None
    interval_seconds: Annotated[
        int | None,
        Field(
            ge=DREAM_BOUNDS["interval_seconds"][0],
            le=DREAM_BOUNDS["interval_seconds"][1],
            description="Seconds between the service's ticks ({} to {}).".format(
                *DREAM_BOUNDS["interval_seconds"]
            ),
        ),
        Strict(),
        BeforeValidator(_integral),
    ] = None
    grace_minutes: Annotated[
        int | None,
        Field(
            ge=DREAM_BOUNDS["grace_minutes"][0],
            le=DREAM_BOUNDS["grace_minutes"][1],
            description="Minutes a batch must be old to be condensed, and a tenant quiet"
            " before its files are dreamed over ({} to {}).".format(*DREAM_BOUNDS["grace_minutes"]),
        ),
        Strict(),
        BeforeValidator(_integral),
    ] = None
    threshold: Annotated[
        int | None,
        Field(
            ge=DREAM_BOUNDS["threshold"][0],
            le=DREAM_BOUNDS["threshold"][1],
            description="Live episodic memories a tenant must exceed ({} to {}).".format(
                *DREAM_BOUNDS["threshold"]
            ),
        ),
        Strict(),
        BeforeValidator(_integral),
    ] = None
    batch_size: Annotated[
        int | None,
        Field(
            ge=DREAM_BOUNDS["batch_size"][0],
            le=DREAM_BOUNDS["batch_size"][1],
            description="Oldest episodic memories per summary ({} to {}).".format(
                *DREAM_BOUNDS["batch_size"]
            ),
        ),
        Strict(),
        BeforeValidator(_integral),
    ] = None
    summary_chars: Annotated[
        int | None,
        Field(
            ge=DREAM_BOUNDS["summary_chars"][0],
            le=DREAM_BOUNDS["summary_chars"][1],
            description="Longest extractive summary ({} to {}).".format(
                *DREAM_BOUNDS["summary_chars"]
            ),
        ),
        Strict(),
        BeforeValidator(_integral),
    ] = None
    write_budget: Annotated[
        int | None,
        Field(
            ge=DREAM_BOUNDS["write_budget"][0],
            le=DREAM_BOUNDS["write_budget"][1],
            description="Most summaries and file rewrites per tick ({} to {}).".format(
                *DREAM_BOUNDS["write_budget"]
            ),
        ),
        Strict(),
        BeforeValidator(_integral),
    ] = None
    concurrency: Annotated[
        int | None,
        Field(
            ge=DREAM_BOUNDS["concurrency"][0],
            le=DREAM_BOUNDS["concurrency"][1],
            description="Most tenants per tick ({} to {}).".format(*DREAM_BOUNDS["concurrency"]),
        ),
        Strict(),
        BeforeValidator(_integral),
    ] = None

    def changes(self) -> dict[str, Any]:
        """The settings given (null: left as they are)."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


class NoArguments(_Request):
    """The request of an operation that takes nothing (GET /v1/admin/dream/config)."""


# The two consolidation jobs: condensing old episodic memories, dreaming over files.
ConsolidationJob = Literal["condense", "dream"]
# Who runs a consolidation job in this database, as the process answering sees it:
# pg_cron (its job is active here), the service (this process's settings offer it; one
# process per database runs it), nobody here (neither), or nobody because
# dream_config.enabled is false.
JobSchedule = Literal["pg_cron", "service", "not scheduled", "disabled"]


class DreamConfigOut(BaseModel):
    enabled: Annotated[
        bool, Field(description="Master switch of every consolidation job (the database's).")
    ]
    interval_seconds: int
    grace_minutes: int
    threshold: int
    batch_size: int
    summary_chars: int
    write_budget: int
    concurrency: int
    condense: Annotated[
        JobSchedule,
        Field(
            description="Who condenses old episodic memories: pg_cron, the service"
            " (MEMEX_CONDENSE_ENABLED, on by default), not scheduled, or disabled"
            " (enabled is false)."
        ),
    ]
    dream: Annotated[
        JobSchedule,
        Field(
            description="Who dreams over files: pg_cron, the service (MEMEX_DREAM_ENABLED,"
            " off by default), not scheduled, or disabled (enabled is false)."
        ),
    ]


class RunsQuery(_Request):
    """Query string of GET /v1/admin/dream/runs."""

    agent_id: Annotated[AgentId | None, Field(description="Only this agent's runs.")] = None
    user_id: Annotated[
        UserId | None,
        Field(description="Only this user's runs (of agent_id; without it, of every agent)."),
    ] = None
    limit: Annotated[
        int,
        Field(ge=1, le=RUNS_LIMIT_MAX, description=f"Runs per page (1 to {RUNS_LIMIT_MAX})."),
        Strict(),
        BeforeValidator(_query_integer),
    ] = DEFAULT_RUNS_LIMIT
    before: Annotated[
        int | None,
        Field(
            ge=1,
            le=2**63 - 1,
            description="Runs older than this id (the next page).",
            examples=[2**63 - 1],  # older than every run: the first page
        ),
        Strict(),
        BeforeValidator(_query_integer),
    ] = None


class DreamUsersQuery(_Request):
    """Query string of GET /v1/admin/dream/users."""

    agent_id: Annotated[AgentId | None, Field(description="Only this agent's users.")] = None
    limit: Annotated[
        int,
        Field(ge=1, le=RUNS_LIMIT_MAX, description=f"Users per page (1 to {RUNS_LIMIT_MAX})."),
        Strict(),
        BeforeValidator(_query_integer),
    ] = DEFAULT_RUNS_LIMIT
    after: Annotated[
        str | None,
        Field(
            max_length=4100,
            pattern=TENANT_CURSOR,
            description="next_after of the last page (opaque).",
            examples=["01.01"],  # before every tenant: the first page
        ),
    ] = None

    def after_tenant(self) -> tuple[str, str] | None:
        """The (agent_id, user_id) the page starts after."""
        return None if self.after is None else decode_tenant_cursor(self.after)


class PauseRequest(_Request):
    """PUT /v1/admin/dream/users/{user_id}/paused."""

    agent_id: AgentId
    paused: Annotated[bool, Strict()]


class TenantPause(PauseRequest):
    """Pause or resume one tenant: PauseRequest (the body) and the path's user_id."""

    user_id: UserId


class RunRef(_Request):
    """A run to undo (POST /v1/admin/dream/runs/{run_id}/restore)."""

    run_id: Annotated[
        int,
        Field(ge=-(2**63), le=2**63 - 1, description="The condense run's id.", examples=[1]),
        Strict(),
        BeforeValidator(_query_integer),
    ]
    agent_id: Annotated[
        AgentId | None,
        Field(
            description="The run's agent (run ids are numbers within an agent's runs): needed"
            " by a caller of every agent when several agents have a run of that number."
        ),
    ] = None


# one tenant (both ids) or a tick (neither); force is for one tenant: said in the schema
_STRING: JsonDict = {"type": "string"}
_DREAM_RUN_RULES: JsonDict = {
    "allOf": [
        {
            "if": {"required": ["agent_id"], "properties": {"agent_id": _STRING}},
            "then": {"required": ["user_id"], "properties": {"user_id": _STRING}},
        },
        {
            "if": {"required": ["user_id"], "properties": {"user_id": _STRING}},
            "then": {"required": ["agent_id"], "properties": {"agent_id": _STRING}},
        },
        {
            "if": {"required": ["force"], "properties": {"force": {"const": True}}},
            "then": {"required": ["agent_id"], "properties": {"agent_id": _STRING}},
        },
    ],
    # the plan of one tenant: "Try it out" shows what would run and writes nothing
    "examples": [{"agent_id": EXAMPLE_AGENT, "user_id": EXAMPLE_USER, "dry_run": True}],
}


class DreamRunRequest(_Request):
    """POST /v1/admin/dream/run: a tick now (no tenant), or one tenant's run."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_DREAM_RUN_RULES)

    agent_id: Annotated[AgentId | None, Field(description="With user_id: run this tenant.")] = None
    user_id: Annotated[UserId | None, Field(description="With agent_id: run this tenant.")] = None
    dry_run: Annotated[bool, Field(description="Return the plan; write nothing."), Strict()] = False
    force: Annotated[
        bool,
        Field(description="A tenant's run: skip the threshold, grace and pause checks."),
        Strict(),
    ] = False

    @model_validator(mode="after")
    def _both_or_neither(self) -> DreamRunRequest:
        if (self.agent_id is None) != (self.user_id is None):
            raise ValueError("give both agent_id and user_id (one tenant) or neither (a tick)")
        if self.force and self.agent_id is None:
            raise ValueError("force is for one tenant's run")
        return self


class RunOut(_Out):
    id: int | None = Field(description="null for a plan (dry run) or a tenant not due")
    agent_id: str
    user_id: str
    kind: str = Field(description="condense | dream | restore")
    status: str = Field(description="done | dry_run | nothing | failed | restored | running")
    actor: str | None
    started_at: datetime | None
    finished_at: datetime | None
    memories_in: int | None
    memories_out: int | None
    files_in: int | None
    files_out: int | None
    files_touched: int | None
    summary_id: UUID | None
    restored_by: int | None
    error: str | None
    details: dict[str, Any]


class RunList(BaseModel):
    runs: list[RunOut]
    next_before: int | None


class SkippedStep(BaseModel):
    step: str = Field(description="condense | dream")
    reason: str = Field(description="Why it did not run (e.g. another runner held the tenant).")


class RunNowOut(RunList):
    """POST /v1/admin/dream/run: the runs, and a tenant's steps that did not run."""

    skipped: list[SkippedStep] = Field(
        description="A tenant's steps that did not run, and why: while the scheduler (or"
        " another run) holds the tenant's consolidation lock, its condense or dream step"
        " is skipped, not waited for. Empty for a tick."
    )


class DreamUserOut(_Out):
    agent_id: str
    user_id: str
    paused: bool
    memory_count: int
    last_dreamed_at: datetime | None
    last_run_id: int | None
    last_run_at: datetime | None
    last_run_kind: str | None
    last_run_status: str | None
    last_error: str | None
    runs_done: int
    runs_failed: int
    runs_restored: int


class DreamUserList(BaseModel):
    """A page of tenants; pass next_after as `after` for the next (null: the last page)."""

    users: list[DreamUserOut]
    next_after: str | None


# a tenant cursor: the UTF-8 bytes of agent_id and user_id in hex, without NUL bytes (ids
# hold none). Any string of this shape is a position in (agent_id, user_id) order, so the
# schema's pattern says exactly what is accepted.
_HEX_TEXT = r"(?:[1-9a-f][0-9a-f]|0[1-9a-f]){1,1024}"
TENANT_CURSOR = rf"^{_HEX_TEXT}\.{_HEX_TEXT}$"


def encode_tenant_cursor(agent_id: str, user_id: str) -> str:
    """An opaque cursor for a page that starts after tenant (agent_id, user_id)."""
    return f"{agent_id.encode().hex()}.{user_id.encode().hex()}"


def decode_tenant_cursor(cursor: str) -> tuple[str, str]:
    agent, user = cursor.split(".")
    # bytes that are not UTF-8 still name a position in the order
    return (
        bytes.fromhex(agent).decode(errors="replace"),
        bytes.fromhex(user).decode(errors="replace"),
    )


class PausedOut(BaseModel):
    agent_id: str
    user_id: str
    paused: bool
