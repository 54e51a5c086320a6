"""The field types shared by every domain's request and response models: bounds,
defaults, validators and annotated types (an agent id, a user id, a memory's content, its
metadata, a cursor...), and the base request and response models. The SQL functions
(sql/*.sql) hold the same bounds and defaults; tests/test_params.py keeps the two in step.
"""

from __future__ import annotations

import enum
import json
import math
import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any
from uuid import UUID

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    WithJsonSchema,
)
from pydantic.config import JsonDict
from typing_extensions import TypeAliasType

from memexdb.embedding.protocol import BLANK
from memexdb.types import MemoryType, SearchMode

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
NO_NUL = "^[^\\x00]*$"
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


def text_field(max_chars: int, description: str, example: str, *, blank: bool = False) -> Any:
    # The pattern is for the schema's readers (clients, fuzzers); the validators next to
    # it give the error message a person can act on. The example is what /docs fills in
    # (memexdb.rest.docs), not the pattern's random text.
    return Field(
        min_length=1,
        max_length=max_chars,
        description=description,
        examples=[example],
        json_schema_extra={"pattern": NO_NUL if blank else _NOT_BLANK},
    )


# The examples of the OpenAPI document (one tenant, one memory and one file that go
# together: /docs "Try it out" stores, then finds, the same memory).
EXAMPLE_AGENT = "demo-agent"
EXAMPLE_USER = "alice"
EXAMPLE_CONTENT = "Alice prefers green tea to coffee."
EXAMPLE_QUERY = "What does Alice like to drink?"
EXAMPLE_PATH = "user/profile.md"


NoNul = AfterValidator(no_nul)
NotBlank = AfterValidator(_not_blank)

AgentId = Annotated[
    str,
    text_field(
        TENANT_ID_MAX_CHARS,
        "Your agent's id; memories are private to (agent_id, user_id).",
        EXAMPLE_AGENT,
        blank=True,
    ),
    NoNul,
]
UserId = Annotated[
    str,
    text_field(
        TENANT_ID_MAX_CHARS,
        "The user the memories are about or belong to.",
        EXAMPLE_USER,
        blank=True,
    ),
    NoNul,
]
Content = Annotated[
    str,
    text_field(
        CONTENT_MAX_CHARS,
        "The memory, as a self-contained sentence or short passage (not only whitespace).",
        EXAMPLE_CONTENT,
    ),
    NotBlank,
]
Query = Annotated[
    str,
    text_field(
        QUERY_MAX_CHARS, "What to recall, in plain words (not only whitespace).", EXAMPLE_QUERY
    ),
    NotBlank,
]


def enum_field(values: type[enum.StrEnum], description: str) -> WithJsonSchema:
    # Inline rather than a $ref: MCP clients hand tool schemas to models as they are.
    return WithJsonSchema(
        {"type": "string", "enum": [v.value for v in values], "description": description}
    )


_KIND = (
    "semantic: facts and preferences; episodic: events and conversations;"
    " procedural: how to do things."
)
Kind = Annotated[MemoryType, enum_field(MemoryType, _KIND)]
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
    "propertyNames": {"pattern": NO_NUL},
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


def query_integer(value: Any) -> Any:
    # A query string's integer arrives as text: decimal digits only (no "1e3", "true").
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,19}", value):
        return int(value)
    return integral(value)


# An integer of a query string: a JSON body's integer, or a query string's digits.
QueryInt = Annotated[int, Strict(), BeforeValidator(query_integer)]
QueryIntOrNone = Annotated[int | None, Strict(), BeforeValidator(query_integer)]


def per_page(maximum: int, what: str, default: int) -> Any:
    """The field of a page size: 1 to `maximum` `what` per page (a QueryInt)."""
    return Field(default, ge=1, le=maximum, description=f"{what} per page (1 to {maximum}).")


def older_than(description: str, maximum: int = 2**63 - 1) -> Any:
    """The field of a page's cursor (a QueryIntOrNone): the rows below it; its maximum,
    older than every row, asks for the first page."""
    return Field(None, ge=1, le=maximum, description=description, examples=[maximum])


def integral(value: Any) -> Any:
    # JSON Schema counts 3.0 as an integer; strict mode (below) would refuse it.
    return int(value) if isinstance(value, float) and value.is_integer() else value


TopK = Annotated[
    int,
    # Before the validator, or the schema shows the bounds as unknown keywords (ge/le).
    Field(ge=1, le=TOP_K_MAX, description=f"How many memories to return (1 to {TOP_K_MAX})."),
    # Strict: JSON true or "3" is not an integer (pydantic's lax mode would take both).
    Strict(),
    BeforeValidator(integral),
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
    Annotated[SearchMode, enum_field(SearchMode, _MODE)] | None,
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
    Annotated[MemoryType, enum_field(MemoryType, _KIND)] | None,
    Field(description="Only memories of this type."),
]
MemoryTypes = Annotated[
    list[Annotated[MemoryType, enum_field(MemoryType, _KIND)]] | None,
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
    BeforeValidator(integral),
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


class RequestModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TenantRequest(RequestModel):
    """A request of one tenant (agent_id, user_id): its first two fields."""

    agent_id: AgentId
    user_id: UserId


class TenantQuery(TenantRequest):
    """The tenant in a URL's query string."""


class OutModel(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class NoArguments(RequestModel):
    """The request of an operation that takes nothing (GET /v1/admin/dream/config)."""
