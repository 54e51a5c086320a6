"""The export format (JSON Lines), defined once: what `memexdb export`, GET /v1/export and
AsyncMemex.export write, and what `memexdb import`, POST /v1/import and
AsyncMemex.import_memories read.

Line 1 is a header ({"record": "header", "format": "memexdb-export", "version": 3, ...});
then one line per record, each naming what it holds in "record": the memories
(`memory`, ExportedMemory: files are memories with a path), then the file
revisions (`file_revision`), the access log (`access`), the consolidation runs
(`consolidation_run`) and the memories' revisions (`memory_revision`), each as stored.
Version 3 (issue 36) added the memories' time fields (validity, supersession,
restored_at) and their revisions; a file of version 2 has neither and reads as before.
A file of version 1 (memexdb before the header) holds memory lines without "record" and
no header: it is read as memories.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from memexdb.fields import AgentId, Metadata, UserId, no_nul
from memexdb.memories.models import ExportedMemory, Importance, Kind

FORMAT = "memexdb-export"
VERSION = 3
# A line of POST /v1/import: a memory of 32768 characters as JSON escapes, its vector and
# metadata fit with room to spare.
LINE_MAX_BYTES = 1024 * 1024
IMPORT_LINES_MAX = 100_000  # lines of one POST /v1/import request (a file: any number)

RecordKind = Literal["memory", "file_revision", "access", "consolidation_run", "memory_revision"]
HISTORY_KINDS: tuple[RecordKind, ...] = (
    "file_revision",
    "access",
    "consolidation_run",
    "memory_revision",
)
# text as Postgres stores it: no NUL characters; counts as an integer column holds them
_Text = Annotated[str, AfterValidator(no_nul)]
_Actor = Annotated[_Text, Field(min_length=1, max_length=200)]
_Path = Annotated[_Text, Field(min_length=1, max_length=512)]
_Count = Annotated[int, Field(ge=0, le=2**31 - 1)]
_Details = Annotated[Metadata, Field(description="As recorded (a JSON object).")]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExportHeader(_Record):
    """Line 1 of an export: the format, its version, what was exported and when."""

    record: Literal["header"]
    format: Literal["memexdb-export"]
    version: int = Field(ge=1, le=2**31 - 1)
    agent_id: AgentId
    user_id: UserId | None = None
    exported_at: datetime
    embedding_model: _Text | None = Field(
        default=None, description="the exporting service's model (each memory names its own)"
    )


class ExportedRevision(_Record):
    """A revision of a file (memex.file_revisions) as recorded: who, when, what."""

    record: Literal["file_revision"]
    agent_id: AgentId
    user_id: UserId
    path: _Path
    memory_id: UUID | None = None
    revision: int = Field(ge=1, le=2**31 - 1)
    operation: Literal["write", "patch", "delete", "restore"]
    actor: _Actor
    at: datetime
    content: _Text | None = None
    size: _Count = 0
    details: _Details = None


class ExportedAccess(_Record):
    """An entry of the access log (memex.access_log) as recorded."""

    record: Literal["access"]
    agent_id: AgentId
    user_id: UserId
    actor: _Actor
    operation: Annotated[_Text, Field(min_length=1, max_length=64)]
    target: Annotated[_Text | None, Field(max_length=512)] = None
    at: datetime
    details: _Details = None


class ExportedRun(_Record):
    """A consolidation run (memex.consolidation_runs) as recorded, without its id."""

    record: Literal["consolidation_run"]
    agent_id: AgentId
    user_id: UserId
    kind: Literal["condense", "dream", "restore"]
    status: Literal["running", "done", "dry_run", "nothing", "failed", "restored"]
    actor: _Actor
    started_at: datetime
    finished_at: datetime | None = None
    memories_in: _Count = 0
    memories_out: _Count = 0
    files_in: _Count = 0
    files_out: _Count = 0
    files_touched: _Count = 0
    summary_id: UUID | None = None
    error: _Text | None = None
    details: _Details = None


class ExportedMemoryRevision(_Record):
    """A revision of a memory (memex.memory_revisions, issue 36) as recorded, without its
    id: a full snapshot of what the memory said then, the fields that changed, who and
    when. memex.import_memory_revisions checks it against the memory (imported first)."""

    record: Literal["memory_revision"]
    agent_id: AgentId
    user_id: UserId
    memory_id: UUID
    revision: int = Field(ge=1, le=2**31 - 1)
    operation: Literal[
        "store", "update", "supersede", "superseded", "archive", "restore", "revert", "import"
    ]
    changed: list[Annotated[_Text, Field(max_length=64)]] = Field(
        default_factory=list, max_length=32
    )
    actor: _Actor
    at: datetime
    content: _Text
    memory_type: Kind
    importance: Importance
    metadata: Metadata = None
    expires_at: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    supersedes: list[UUID] | None = Field(default=None, max_length=1000)
    superseded_by: UUID | None = None
    superseded_at: datetime | None = None
    archived_at: datetime | None = None
    details: _Details = None


HistoryRecord = ExportedRevision | ExportedAccess | ExportedRun | ExportedMemoryRevision
HISTORY_MODELS: dict[str, type[HistoryRecord]] = {
    "file_revision": ExportedRevision,
    "access": ExportedAccess,
    "consolidation_run": ExportedRun,
    "memory_revision": ExportedMemoryRevision,
}


def header(agent_id: str, user_id: str | None, exported_at: datetime, model: str) -> dict[str, Any]:
    """The first line of an export."""
    return ExportHeader(
        record="header",
        format=FORMAT,
        version=VERSION,
        agent_id=agent_id,
        user_id=user_id,
        exported_at=exported_at,
        embedding_model=model,
    ).model_dump(mode="json")


def kind_of(record: dict[str, Any]) -> str:
    """What a line holds: its "record" (a version-1 line, without one, is a memory)."""
    kind = record.get("record", "memory")
    return kind if isinstance(kind, str) else "?"


def check_header(record: dict[str, Any]) -> ExportHeader:
    """The header, refusing a version this memexdb cannot read (ValidationError or
    ValueError)."""
    found = ExportHeader.model_validate(record)
    if found.version > VERSION:
        raise ValueError(
            f"is an export of format version {found.version}; this memexdb reads up to {VERSION}"
        )
    return found


class ImportResponse(BaseModel):
    """What POST /v1/import did: records inserted and skipped (they existed already),
    memories embedded again (no vector, or one of another model), both counts per kind
    of record, and how many of the import's access-log entries are older than the
    access-log retention window (the next maintenance prunes them, as it prunes live
    entries that old)."""

    imported: int
    skipped: int
    reembedded: int
    kinds: dict[str, dict[str, int]]
    access_log_expiring: int


__all__ = [
    "FORMAT",
    "HISTORY_KINDS",
    "HISTORY_MODELS",
    "IMPORT_LINES_MAX",
    "LINE_MAX_BYTES",
    "VERSION",
    "ExportHeader",
    "ExportedAccess",
    "ExportedMemory",
    "ExportedMemoryRevision",
    "ExportedRevision",
    "ExportedRun",
    "HistoryRecord",
    "ImportResponse",
]
