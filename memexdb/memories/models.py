"""The memories domain's request and response models (sql/memories/: memex.store,
search, forget, count, list, update, erase, export)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, ClassVar, Literal
from uuid import UUID

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Field,
    Strict,
    ValidationError,
    WithJsonSchema,
    model_validator,
)

from memexdb.error_models import invalid_argument
from memexdb.fields import (
    EXAMPLE_AGENT,
    EXAMPLE_CONTENT,
    EXAMPLE_MEMORY_ID,
    EXAMPLE_USER,
    LIST_LIMIT_MAX,
    METADATA_MAX_DEPTH,
    TENANT_ID_MAX_CHARS,
    TOO_DEEP,
    AgentId,
    Content,
    Metadata,
    NoNul,
    OutModel,
    Query,
    QueryTimestamp,
    RequestModel,
    TenantQuery,
    TenantRequest,
    Timestamp,
    UserId,
    enum_field,
    integral,
    no_nul,
    request_config,
    tenant_example,
)
from memexdb.types import MemoryType, SearchMode

# --- The memories domain's field types, bounds and defaults ---

# Bounds (sql/: memex._check_tenant, memex._check_memory, memex.search).
TOP_K_MAX = 100
HALF_LIFE_MIN_DAYS = 0.001  # shorter would overflow the decay's exponent in SQL
HALF_LIFE_MAX_DAYS = 36500.0
IMPORTANCE_MAX = 2.0
IMPORTANCE_MIN_POSITIVE = 1e-6  # smaller positive values underflow the score in SQL
BATCH_MAX_ITEMS = 1000  # per REST request (a body size limit; SQL and Python take more)

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


def _importance(value: float) -> float:
    if 0 < value < IMPORTANCE_MIN_POSITIVE:
        raise ValueError(f"must be 0 or between {IMPORTANCE_MIN_POSITIVE:f} and 2")
    return value


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


def _in_future(value: datetime | None) -> datetime | None:
    # a memory that expires in the past would be stored invisible: say so instead
    if value is not None and value <= datetime.now(UTC):
        raise ValueError("must be in the future")
    return value


FutureTimestamp = Annotated[Timestamp, AfterValidator(_in_future)]
# the expiry a put or a refresh sets (null: never)
Expiry = Annotated[
    FutureTimestamp,
    Field(description="The memory disappears after this (UTC if naive); null: never."),
]


TopK = Annotated[
    int,
    # Before the validator, or the schema shows the bounds as unknown keywords (ge/le).
    Field(ge=1, le=TOP_K_MAX, description=f"How many memories to return (1 to {TOP_K_MAX})."),
    # Strict: JSON true or "3" is not an integer (pydantic's lax mode would take both).
    Strict(),
    BeforeValidator(integral),
]


def _finite(low: float, high: float, description: str) -> Any:
    """The Field of a number from `low` to `high`, never inf or NaN."""
    return Field(ge=low, le=high, allow_inf_nan=False, description=description)


# a JSON number only (true or "3" is refused), or null: not sent
_Number = Annotated[float, Strict()] | None

Alpha = Annotated[
    _Number,
    _finite(
        0.0,
        1.0,
        "Weight of relevance against recency in the memex formula"
        " alpha * relevance + (1 - alpha) * recency: 1 = relevance only, 0 = newest first."
        " Not sent (null, the default): relevance * (1 + 0.25 * recency), where recency"
        " only breaks ties among relevant memories of any age.",
    ),
]
HalfLifeDays = Annotated[
    _Number,
    _finite(
        HALF_LIFE_MIN_DAYS,
        HALF_LIFE_MAX_DAYS,
        "Age in days at which recency has halved. Not sent (null, the default):"
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
    _Number,
    _finite(
        0.0,
        1.0,
        "How much a memory's neighbours in time lend it relevance"
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
        examples=[EXAMPLE_MEMORY_ID],
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
            raise ValueError(TOO_DEEP)
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


SUPERSEDES_MAX = 100  # memex.store's bound on p_supersedes


def _distinct(value: list[UUID] | None) -> list[UUID] | None:
    if value is not None and len(set(value)) != len(value):
        raise ValueError("must not name a memory twice")
    return value


Supersedes = Annotated[
    list[UUID] | None,
    Field(
        min_length=1,
        max_length=SUPERSEDES_MAX,
        description="The ids of older memories of this tenant that this one replaces (a"
        " newer version of the same fact: moved, changed job, replaced the car). They stay,"
        " linked both ways (superseded_by), out of the default search, and their validity"
        f" ends where this one's starts. At most {SUPERSEDES_MAX}, no repeats; an unknown id,"
        " or another tenant's, is a 404.",
        json_schema_extra={"uniqueItems": True},
    ),
    AfterValidator(_distinct),
]
ValidFrom = Annotated[
    Timestamp,
    Field(
        description="When the fact started to hold (default: when it was recorded; UTC if naive)."
    ),
]
ValidTo = Annotated[
    Timestamp,
    Field(description="When the fact stopped holding (default: still holds; UTC if naive)."),
]


def _validity(valid_from: datetime | None, valid_to: datetime | None) -> None:
    if valid_from is not None and valid_to is not None and valid_to <= valid_from:
        raise ValueError("valid_to must be after valid_from")


class MemoryCreate(TenantRequest):
    """A memory to store for tenant (agent_id, user_id)."""

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
    supersedes: Supersedes = None
    valid_from: ValidFrom = None
    valid_to: ValidTo = None

    @model_validator(mode="after")
    def _coherent(self) -> MemoryStore:
        _validity(self.valid_from, self.valid_to)
        if self.id is not None and self.supersedes and self.id in self.supersedes:
            raise ValueError("supersedes: a memory cannot supersede itself")
        return self


_NOT_IN_BATCH = ("valid_from", "valid_to")

RETIRE_REASON_MAX_CHARS = 300  # memex.retire_memories' bound on p_reason


class MemoryRetire(TenantRequest):
    """Memories of a tenant that no longer hold and have no newer version (memorize's
    "retire"): superseded with no successor, out of the default search, kept in history
    (memex.retire_memories)."""

    ids: Annotated[
        list[UUID], Field(min_length=1, max_length=SUPERSEDES_MAX), AfterValidator(_distinct)
    ]
    reason: Annotated[str, Field(max_length=RETIRE_REASON_MAX_CHARS)] | None = None


class FactCheck(TenantRequest):
    """One memory_fact decision of memorize as the model sent it (raw, untrusted), and
    what the call has seen so far: checked by memex.check_memorize_fact, the rules every
    language's memorize runs (issue 38)."""

    arguments: str
    offered: list[UUID]
    named: list[UUID] = Field(default_factory=list)
    retired: int = 0


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


class MemoryBatchCreate(RequestModel):
    """Many memories in one request, for imports (one statement, all or nothing)."""

    model_config = request_config(
        {
            "examples": [
                {
                    "memories": [
                        {"agent_id": EXAMPLE_AGENT, "user_id": EXAMPLE_USER, "content": text}
                        for text in (EXAMPLE_CONTENT, "Alice is allergic to peanuts.")
                    ]
                }
            ]
        }
    )

    memories: list[MemoryStore] = Field(min_length=1, max_length=BATCH_MAX_ITEMS)

    @model_validator(mode="after")
    def _plain(self) -> MemoryBatchCreate:
        # memex.store_many takes no validity yet: refused, never dropped (supersedes it
        # takes, per item, in batch order)
        for i, item in enumerate(self.memories):
            given = item.model_fields_set & set(_NOT_IN_BATCH)
            if given:
                raise ValueError(
                    f"memories[{i}]: {', '.join(sorted(given))} only in a single store"
                    " (POST /v1/memories), not in a batch"
                )
        return self


class MemoryPut(RequestModel):
    """One write of a put batch: an upsert by id, or a delete (content null)."""

    id: Annotated[
        UUID,
        Field(
            description="The memory's id (the caller's key, e.g. a LangGraph store item's):"
            " the memory with this id is replaced, or made when the tenant has none."
        ),
    ]
    content: Annotated[
        Content | None,
        Field(description="The text embedded and searched; null deletes the memory."),
    ] = None
    metadata: Metadata = None
    expires_at: Expiry = None


class MemoryPutBatch(TenantRequest):
    """Upserts and deletes of one tenant's memories by id, in order, in one statement (what
    the LangGraph store's batches send): a put racing a delete of the same id stores it."""

    model_config = tenant_example(memories=[{"id": EXAMPLE_MEMORY_ID, "content": EXAMPLE_CONTENT}])

    memory_type: Kind = MemoryType.SEMANTIC
    memories: list[MemoryPut] = Field(min_length=1, max_length=BATCH_MAX_ITEMS)


class MemoryExpiry(RequestModel):
    """The new expiry of one memory of a refresh batch."""

    id: Annotated[UUID, Field(description="The memory's id.")]
    expires_at: Expiry = None


class MemoryRefreshBatch(TenantRequest):
    """New expiries of one tenant's memories by id, in one statement (what the LangGraph
    store sends to refresh the TTL of the items it read): content, metadata and
    updated_at stay; ids the tenant has not (or no longer) are skipped."""

    model_config = tenant_example(memories=[{"id": EXAMPLE_MEMORY_ID, "expires_at": None}])

    memories: list[MemoryExpiry] = Field(min_length=1, max_length=BATCH_MAX_ITEMS)


class RefreshedResponse(BaseModel):
    """How many memories of the batch had their expiry set (live ones of the tenant)."""

    refreshed: int


class MemoryLookup(TenantRequest):
    """Many memories of one tenant by id in one request (ids it does not have are left
    out of the answer)."""

    model_config = tenant_example(memory_ids=[EXAMPLE_MEMORY_ID])

    memory_ids: list[UUID] = Field(min_length=1, max_length=BATCH_MAX_ITEMS)


_INCLUDE_ARCHIVED = Field(
    description="Also the memories consolidation archived (by default their summary"
    " stands in for them); each says which summary replaced it (superseded_by)."
)
IncludeArchived = Annotated[bool, _INCLUDE_ARCHIVED, Strict()]
# in a query string: true / false
IncludeArchivedQuery = Annotated[bool, _INCLUDE_ARCHIVED]


class MemorySearchRequest(TenantRequest):
    """Search a tenant's memories: score = relevance * (1 + 0.25 * recency) * importance, or
    (alpha*relevance + (1-alpha)*recency)*importance when alpha is sent."""

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
    include_superseded: Annotated[
        bool,
        Field(
            description="Also the memories a newer version superseded, each ranked right"
            " after its successor when both are found."
        ),
        Strict(),
    ] = False
    as_of: Annotated[
        Timestamp,
        Field(
            description="Answer as of this moment: only memories recorded by then and not"
            " yet superseded, archived or expired then, ranked with recency from then"
            " (UTC if naive). Forgotten memories stay forgotten."
        ),
    ] = None
    valid_at: Annotated[
        Timestamp,
        Field(description="Only facts valid at this moment (valid_from <= it < valid_to)."),
    ] = None
    created_after: Annotated[
        Timestamp, Field(description="Only memories created at or after this (UTC if naive).")
    ] = None
    created_before: Annotated[
        Timestamp, Field(description="Only memories created before this (UTC if naive).")
    ] = None
    now: Annotated[
        Timestamp,
        Field(
            description="Rank as of this time: recency is measured back from it (default:"
            " the database's now; UTC if naive). For evaluations that ask at a past date."
        ),
    ] = None

    @model_validator(mode="after")
    def _window(self) -> MemorySearchRequest:
        after, before = self.created_after, self.created_before
        if after is not None and before is not None and after >= before:
            raise ValueError("created_after must be before created_before")
        return self

    def types(self) -> list[MemoryType] | None:
        return type_filter(self.memory_type, self.memory_types)


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
        NoNul,
    ]


AsOf = Annotated[
    QueryTimestamp,
    Field(
        description="Read the memory as it was at this moment (ISO 8601): its revision then"
        " (404 if it did not exist yet).",
        examples=["2100-01-01T00:00:00Z"],
    ),
]


class MemoryReadQuery(TenantQuery):
    """Query string of GET /v1/memories/{memory_id}: the tenant, and optionally a moment."""

    as_of: AsOf = None


class MemoryRef(MemoryReadQuery):
    """One memory of a tenant, by id (in REST: the tenant in the query, the id in the path),
    optionally as it was at a moment."""

    memory_id: MemoryId


RevisionNumber = Annotated[
    int,
    Field(ge=1, le=2**31 - 1, description="A revision number (1 is the first).", examples=[1]),
    BeforeValidator(integral),
]


class MemoryHistoryQuery(TenantQuery):
    """Query string of GET /v1/memories/{memory_id}/revisions: a page of revisions."""

    limit: ListLimit = DEFAULT_LIST_LIMIT
    before: Annotated[
        RevisionNumber | None,
        Field(description="Revisions older than this one (next_before of the previous page)."),
    ] = None


class MemoryHistory(MemoryHistoryQuery):
    """The revisions of one memory, newest first, a page at a time."""

    memory_id: MemoryId


class MemoryDiffQuery(TenantQuery):
    """Query string of GET /v1/memories/{memory_id}/revisions/diff."""

    from_revision: RevisionNumber
    to_revision: RevisionNumber


class MemoryDiff(MemoryDiffQuery):
    """Two revisions of one memory to compare."""

    memory_id: MemoryId


class MemoryRevertBody(TenantRequest):
    """Body of POST /v1/memories/{memory_id}/revert."""

    revision: Annotated[RevisionNumber, Strict()]


class MemoryRevert(MemoryRevertBody):
    """Make what a memory said at a revision current again (a new revision)."""

    memory_id: MemoryId


class MemoryRevisionOut(OutModel):
    """One revision of a memory: a full snapshot of what it said after a change."""

    id: int
    agent_id: str
    user_id: str
    memory_id: UUID
    revision: int
    operation: str = Field(
        description="store, update, supersede, superseded, archive, restore, revert or import"
    )
    changed: list[str] = Field(description="the fields this change changed")
    actor: str
    at: datetime
    content: str
    memory_type: MemoryType
    importance: float
    metadata: dict[str, Any]
    expires_at: datetime | None
    valid_from: datetime | None
    valid_to: datetime | None
    supersedes: list[UUID] | None
    superseded_by: UUID | None
    superseded_at: datetime | None
    archived_at: datetime | None
    details: dict[str, Any]


class MemoryRevisionList(BaseModel):
    """Revisions of a memory, newest first; next_before pages on (null: the last page)."""

    revisions: list[MemoryRevisionOut]
    next_before: int | None


class MemoryDiffOut(BaseModel):
    """What changed from one revision of a memory to another: per changed field its value
    in each (memex.diff_memory_revisions)."""

    memory_id: UUID
    from_revision: int
    to_revision: int
    content: str = Field(description="a unified diff of the content (empty: the same text)")
    fields: dict[str, Any] = Field(
        description='each other field that differs: {"from": value, "to": value}'
    )


AnyUserOfAgent = Annotated[
    UserId | None,
    Field(
        description="The memory's user; left out (memex's call): any user of agent_id this"
        " caller may act for."
    ),
]


class ForgetQuery(RequestModel):
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


class ExportQuery(RequestModel):
    """Query string of GET /v1/export: an agent's memories, or one user's."""

    agent_id: AgentId
    user_id: Annotated[
        UserId | None, Field(description="Only this user's memories (default: every user's).")
    ] = None
    embeddings: Annotated[
        bool, Field(description="Include each memory's embedding (384 numbers by default).")
    ] = False
    memory_revisions: Annotated[
        bool,
        Field(
            description="Include every revision of every memory (its history: what it said,"
            " who changed it and when; default true). False leaves the `memory_revision`"
            " lines out: an import then starts each memory's history anew."
        ),
    ] = True


_PATCH_FIELDS = (
    "content",
    "importance",
    "metadata",
    "memory_type",
    "supersedes",
    "valid_from",
    "expires_at",
    "valid_to",
)
_NULLABLE = ("expires_at", "valid_to")  # null removes the expiry / reopens the validity


def _patch_schema(schema: dict[str, Any]) -> None:
    # At least one field to change; only expires_at and valid_to may be null.
    schema["anyOf"] = [{"required": [f]} for f in _PATCH_FIELDS]
    schema["examples"] = [{"agent_id": EXAMPLE_AGENT, "user_id": EXAMPLE_USER, "importance": 1.5}]
    for name in _PATCH_FIELDS:
        if name in _NULLABLE:
            continue
        prop = schema["properties"][name]
        options = [o for o in prop.pop("anyOf") if o != {"type": "null"}]
        prop.pop("default", None)
        prop.update(options[0])


class MemoryPatch(RequestModel):
    """The fields of a memory to change: at least one; a field left out keeps its value.
    `expires_at: null` removes the expiry; a new `content` is embedded again."""

    model_config = request_config(_patch_schema)

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
    supersedes: Supersedes = None
    valid_from: ValidFrom = None
    valid_to: Annotated[
        Timestamp,
        Field(description="When the fact stopped holding (UTC if naive); null: it still holds."),
    ] = None

    @model_validator(mode="after")
    def _changes_something(self) -> MemoryPatch:
        given = self.model_fields_set & set(_PATCH_FIELDS)
        if not given:
            raise ValueError(f"must change at least one of {', '.join(_PATCH_FIELDS)}")
        for name in given - set(_NULLABLE):
            if getattr(self, name) is None:
                raise ValueError(f"{name} may not be null (leave it out to keep it)")
        _validity(self.valid_from, self.valid_to)
        return self

    @property
    def clear_valid_to(self) -> bool:
        return "valid_to" in self.model_fields_set and self.valid_to is None

    @property
    def clear_expires_at(self) -> bool:
        return "expires_at" in self.model_fields_set and self.expires_at is None


class MemoryUpdate(MemoryPatch):
    """A MemoryPatch of one memory, by id (in REST: the patch in the body, the id in the
    path)."""

    memory_id: MemoryId


class MemoryOut(OutModel):
    """A stored memory."""

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
        default=None,
        description="the summary that replaced this archived memory, or the newer version"
        " that superseded it",
    )
    archived_at: datetime | None = Field(
        default=None, description="when consolidation archived it (null: live)"
    )
    valid_from: datetime | None = Field(
        default=None, description="when the fact started to hold (null: from created_at)"
    )
    valid_to: datetime | None = Field(
        default=None, description="when the fact stopped holding (null: it still holds)"
    )
    superseded_at: datetime | None = Field(
        default=None, description="when a newer memory (superseded_by) replaced it"
    )
    supersedes: list[UUID] | None = Field(
        default=None, description="the older memories this one replaced"
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


class ExportedMemory(RequestModel):
    """One line of an export (JSON Lines): every field of a memory, the embedding optional."""

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
    # time (issue 36; format version 3): when the fact held, the memories this one
    # supersedes, when a newer one superseded it (superseded_by names it) and when a
    # consolidation restore brought it back (it stays out of condensing until newer
    # memories arrive)
    valid_from: QueryTimestamp = None
    valid_to: QueryTimestamp = None
    supersedes: list[UUID] | None = Field(default=None, max_length=1000)
    superseded_at: QueryTimestamp = None
    restored_at: QueryTimestamp = None

    @model_validator(mode="after")
    def _valid_range(self) -> ExportedMemory:
        # as the table's check (supersession may close a fact where it began: equal)
        if self.valid_from and self.valid_to and self.valid_to < self.valid_from:
            raise ValueError("valid_to must not be before valid_from")
        return self

    def lineage(self) -> dict[str, Any] | None:
        """What memex.import_memories takes as this memory's p_lineage item: consolidation's
        lineage and the memory's time, the keys that are set (None: none is)."""
        found: dict[str, Any] = {}
        if self.source_ids:
            found["source_ids"] = [str(i) for i in self.source_ids]
        if self.superseded_by is not None:
            found["superseded_by"] = str(self.superseded_by)
        if self.supersedes:
            found["supersedes"] = [str(i) for i in self.supersedes]
        for name in ("archived_at", "valid_from", "valid_to", "superseded_at", "restored_at"):
            value = getattr(self, name)
            if value is not None:
                found[name] = value.isoformat()
        return found or None


class Deleted(BaseModel):
    """The memory that was deleted."""

    deleted: MemoryOut


class ExportPageQuery(RequestModel):
    """export_page: one page of an agent's user's (or all its users') memories, after
    `after` ((user_id, created_at, id) of the previous page's last row); the agent and
    user are checked by the operation as every tenant field is."""

    agent_id: str
    user_id: str | None = None
    embeddings: bool = False
    after: tuple[str, datetime, UUID] | None = None
    limit: int = DEFAULT_EXPORT_BATCH


class HistoryPageQuery(RequestModel):
    """export_history: one page of the history of an export (file revisions, access log,
    consolidation runs, and with `memory_revisions` the memories' revisions) after
    `after` ((kind, user_id, id) of the previous page's last row: file revisions, access
    entries and memory revisions are numbered per user)."""

    agent_id: str
    user_id: str | None = None
    after: tuple[str, str, int] | None = None
    limit: int = DEFAULT_EXPORT_BATCH
    memory_revisions: bool = True


class MemoryIds(RequestModel):
    """missing_memory_ids: which of these ids no memory has yet (an import's batch)."""

    ids: list[UUID]


ImportedHistory = Literal["file_revision", "access", "consolidation_run", "memory_revision"]


class HistoryImport(RequestModel):
    """import_history: one batch of an import's history records of one kind, as
    memexdb.export_format's models dump them."""

    kind: ImportedHistory
    records: list[dict[str, Any]]


class MemoryImport(RequestModel):
    """import_memory_batch: one batch of an import's new memories (ExportedMemory items,
    validated as their records were read)."""

    memories: list[ExportedMemory]
