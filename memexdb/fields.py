"""The field types shared by every domain's request and response models: bounds,
defaults, validators and annotated types (an agent id, a user id, a memory's content, its
metadata, a query string's integer...), and the base request and response models; a
type of one domain is in that domain's models.py. The SQL functions
(sql/*.sql) hold the same bounds and defaults; tests/test_params.py keeps the two in step.
"""

from __future__ import annotations

import enum
import json
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

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

# Bounds (sql/: memex._check_tenant, memex._check_memory, memex._check_metadata).
TENANT_ID_MAX_CHARS = 128
CONTENT_MAX_CHARS = 32768
QUERY_MAX_CHARS = 8000
METADATA_MAX_BYTES = 65536  # of JSON text, as Postgres writes jsonb
METADATA_MAX_DEPTH = 32  # nested objects/arrays; checked before Postgres sees the value
LIST_LIMIT_MAX = 1000  # memories per page of memex.list_memories / memex.export_memories

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


TOO_DEEP = f"must not nest deeper than {METADATA_MAX_DEPTH} levels"


def _json_value(value: Any, depth: int) -> None:
    if depth > METADATA_MAX_DEPTH:
        raise ValueError(TOO_DEEP)
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


def any_text(max_chars: int, description: str) -> Any:
    """The field of a text that may be empty or blank (but holds no NUL: NoNul next to it
    says so to a person, the pattern to the schema's readers)."""
    return Field(
        max_length=max_chars, description=description, json_schema_extra={"pattern": NO_NUL}
    )


# The examples of the OpenAPI document (one tenant, one memory and one file that go
# together: /docs "Try it out" stores, then finds, the same memory).
EXAMPLE_AGENT = "demo-agent"
EXAMPLE_USER = "alice"
EXAMPLE_CONTENT = "Alice prefers green tea to coffee."
EXAMPLE_QUERY = "What does Alice like to drink?"
EXAMPLE_PATH = "user/profile.md"
EXAMPLE_MEMORY_ID = "0b8e2f4a-6c1d-4e7f-9a3b-5d2c8e1f0a47"


def request_config(json_schema_extra: JsonDict | Callable[[JsonDict], None]) -> ConfigDict:
    """The model_config of a request (a RequestModel's: no unknown field) whose JSON
    schema `json_schema_extra` completes (its examples, or a function that edits it)."""
    return ConfigDict(extra="forbid", json_schema_extra=json_schema_extra)


def tenant_example(**fields: Any) -> ConfigDict:
    """The model_config of a tenant's request: no unknown field, and the OpenAPI example
    of the demo tenant with `fields`."""
    example = {"agent_id": EXAMPLE_AGENT, "user_id": EXAMPLE_USER, **fields}
    return request_config({"examples": [example]})


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


def query_integer(value: Any) -> Any:
    # A query string's integer arrives as text: decimal digits only (no "1e3", "true").
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]{1,19}", value):
        return int(value)
    return integral(value)


# An integer of a query string: a JSON body's integer, or a query string's digits.
QueryInt = Annotated[int, Strict(), BeforeValidator(query_integer)]
QueryIntOrNone = Annotated[int | None, Strict(), BeforeValidator(query_integer)]


def within(low: int, high: int, default: int | None, description: str) -> Any:
    """The field of an Integral from `low` to `high` (`default` when left out), which
    `description` names where it says {low} and {high}."""
    return Field(default, ge=low, le=high, description=description.format(low=low, high=high))


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


# An integer of a JSON body (3.0 counts, as JSON Schema says).
Integral = Annotated[int, Strict(), BeforeValidator(integral)]


QueryTimestamp = Annotated[datetime | None, AfterValidator(_utc)]


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
