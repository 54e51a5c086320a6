"""The files domain's models: file memory (sql/files/: memex.write_file, read_file,
list_files, patch_file, ...)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Field,
    Strict,
    ValidationInfo,
    field_validator,
    model_validator,
)

from memexdb.fields import (
    CONTENT_MAX_CHARS,
    EXAMPLE_AGENT,
    EXAMPLE_PATH,
    EXAMPLE_USER,
    LIST_LIMIT_MAX,
    AgentId,
    Integral,
    NoNul,
    NotBlank,
    OutModel,
    Query,
    QueryIntOrNone,
    QueryTimestamp,
    RequestModel,
    TenantQuery,
    TenantRequest,
    UserId,
    any_text,
    integral,
    older_than,
    query_integer,
    request_config,
    text_field,
    within,
)

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
    NoNul,
]
FileContent = Annotated[
    str,
    text_field(
        CONTENT_MAX_CHARS,
        f"The whole file (1 to {CONTENT_MAX_CHARS} characters, not blank).",
        "# Alice\n\n## Preferences\n\n- green tea, no sugar\n",
    ),
    NotBlank,
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
    BeforeValidator(integral),
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
    BeforeValidator(query_integer),
]
LineNumber = Annotated[
    int | None,
    Field(ge=1, le=LINE_MAX, description="A line number (1-based, inclusive).", examples=[1]),
    Strict(),
    BeforeValidator(query_integer),
]
PageLimit = Annotated[
    int,
    Field(ge=1, le=LIST_LIMIT_MAX, description=f"Entries per page (1 to {LIST_LIMIT_MAX})."),
    Strict(),
    BeforeValidator(query_integer),
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


class FileCheck(TenantRequest):
    """One memory_write or memory_patch proposal of memorize as the model sent it (raw,
    untrusted): checked by memex.check_memorize_file, the rules every language's
    memorize runs (issue 38)."""

    tool: str
    arguments: str


class FileWrite(TenantRequest):
    """Create or overwrite a file (its content is embedded, so search ranks it)."""

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


class FilePatch(RequestModel):
    """Append under a markdown heading (created if absent), or replace one exact text."""

    model_config = request_config(_file_patch_schema)

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
        text_field(CONTENT_MAX_CHARS, "Text to append (not only whitespace).", "- oat milk"),
        NotBlank,
    ] = None
    old_text: Annotated[
        str | None,
        text_field(
            CONTENT_MAX_CHARS,
            "Exact text to replace: must occur exactly once.",
            "no sugar",
            blank=True,
        ),
        NoNul,
    ] = None
    new_text: Annotated[
        str | None, any_text(CONTENT_MAX_CHARS, "What old_text becomes."), NoNul
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

    base_revision: Annotated[BaseRevision, BeforeValidator(query_integer)] = None


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
    before: QueryIntOrNone = older_than("Revisions older than this one (the next page).", 2**31 - 1)


class RevisionQuery(FileQuery):
    """Query string of GET /v1/files/revision."""

    revision: Revision


class DiffQuery(FileQuery):
    """Query string of GET /v1/files/diff."""

    from_revision: Revision
    to_revision: Revision


class RestoreRequest(TenantRequest):
    """Make an earlier revision current again (a new revision)."""

    path: FilePath
    revision: Annotated[
        int, Field(ge=1, le=2**31 - 1, examples=[1]), Strict(), BeforeValidator(integral)
    ]
    base_revision: BaseRevision = None


class SmartReadRequest(TenantRequest):
    """One bounded context block from the most relevant files and memories."""

    query: Query
    budget: Integral = within(
        SMART_READ_MIN_BUDGET,
        SMART_READ_MAX_BUDGET,
        DEFAULT_SMART_READ_BUDGET,
        "Most characters the context block may hold ({low} to {high}).",
    )


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
    before: QueryIntOrNone = older_than("Entries older than this id (the next page).")


class FileOut(OutModel):
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


class FileEntryOut(OutModel):
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


class RevisionOut(OutModel):
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


class SmartReadOut(OutModel):
    context: str
    chars: int
    budget: int
    sources: list[dict[str, Any]]


class AccessEventOut(OutModel):
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


# --- Passages: memory_search (memex.search_passages, sql/files/103_search_passages.sql) ---


# Bounds (sql/files/103_search_passages.sql checks the same).
PASSAGES_TOP_K_MAX = 50
DEFAULT_PASSAGES_TOP_K = 8
PASSAGE_MIN_CHARS = 100
PASSAGE_MAX_CHARS = 8000
DEFAULT_PASSAGE_CHARS = 800


AnswerWanted = Annotated[
    bool,
    Field(
        description="Also ask the configured LLM for an answer that cites the passages"
        " it used ([1], [2], ...). Without an LLM the passages come back alone."
    ),
    Strict(),
]


class PassageSearchRequest(TenantRequest):
    """memory_search: passages of files and memories for a query, optionally answered."""

    query: Query
    top_k: Integral = within(
        1,
        PASSAGES_TOP_K_MAX,
        DEFAULT_PASSAGES_TOP_K,
        "How many passages to return ({low} to {high}).",
    )
    passage_chars: Integral = within(
        PASSAGE_MIN_CHARS,
        PASSAGE_MAX_CHARS,
        DEFAULT_PASSAGE_CHARS,
        "Most characters per passage ({low} to {high}); longer ones are cut, ending in '…'.",
    )
    answer: AnswerWanted = False


class PassageOut(OutModel):
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
