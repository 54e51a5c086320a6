"""Typed values of the memexdb API: what SQL functions return, read by column name."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID


class MemoryType(enum.StrEnum):
    """episodic: events and conversations; semantic: facts and preferences;
    procedural: how to do things."""

    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"


class SearchMode(enum.StrEnum):
    """vector: cosine similarity; text: BM25 full-text rank; hybrid: a linear blend of both."""

    VECTOR = "vector"
    TEXT = "text"
    HYBRID = "hybrid"


class Access(enum.StrEnum):
    """What an API key may do: read (search, count, list, get, export); write (also store,
    update, delete, erase, import); admin (also manage keys and read the audit log)."""

    READ = "read"
    WRITE = "write"
    ADMIN = "admin"


@dataclass(frozen=True, slots=True)
class Memory:
    """A stored memory (SQL type memex.memory_record)."""

    id: UUID
    agent_id: str
    user_id: str
    memory_type: MemoryType
    content: str
    importance: float
    metadata: dict[str, Any]
    embedding_model: str
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None
    # consolidation: a summary's sources; an archived source's summary and archive time
    source_ids: list[UUID] = field(default_factory=list)
    superseded_by: UUID | None = None
    archived_at: datetime | None = None
    # time (issue 36): when the fact held (null valid_from: from created_at; null valid_to:
    # still holds), when a newer memory superseded it, and the memories this one supersedes
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    superseded_at: datetime | None = None
    supersedes: list[UUID] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchHit(Memory):
    """One ranked result (SQL type memex.search_hit): the memory, every field as Memory
    has it, with the parts of its score."""

    similarity: float | None
    text_rank: float | None
    relevance: float
    recency: float
    score: float


@dataclass(frozen=True, slots=True)
class RateLimitResult:
    """Result of memex.rate_limit_hit."""

    allowed: bool
    hits: int
    remaining: int
    retry_after_seconds: float


@dataclass(frozen=True, slots=True)
class MaintenanceResult:
    """Result of memex.maintenance."""

    expired_memories_deleted: int
    rate_limit_rows_deleted: int
    tenants_indexed: int  # tenants that finished moving into the ANN index (0 or 1)
    memories_indexed: int  # rows moved into the ANN index; > 0: more may be waiting
    access_log_rows_deleted: int  # entries older than settings.access_log_retention_days


@dataclass(frozen=True, slots=True)
class QueuedMemory:
    """A row of memex.embed_queue_take: a queued memory's current content."""

    memory_id: UUID
    content: str
    attempts: int


@dataclass(frozen=True, slots=True)
class EmbedBatch:
    """What one batch of the embed queue did (AsyncMemex.embed_queued): entries taken,
    vectors stored (the others' memories changed meanwhile or were being written: they
    stay queued), entries whose embedding failed (backed off)."""

    taken: int
    written: int
    failed: int
    # what failed, one line each: "<memory id> (attempt n): <error>"
    errors: tuple[str, ...] = field(default=(), compare=False)


@dataclass(frozen=True, slots=True)
class EmbedQueueDepth:
    """memex.embed_queue_depth: entries queued, due now, failed at least once; the oldest
    entry's time and when the next one is due (None: the queue is empty)."""

    queued: int
    due: int
    failing: int
    oldest_enqueued_at: datetime | None
    next_attempt_at: datetime | None


@dataclass(frozen=True, slots=True)
class MetricFigure:
    """A row of memex.metrics_snapshot: one of GET /metrics' database-derived figures
    (`kind` and `status` only for consolidation_runs)."""

    metric: str
    kind: str | None
    status: str | None
    value: int


@dataclass(frozen=True, slots=True)
class SchemaState:
    """memex.schema_state: the schema's alembic revision (None: never migrated) and
    whether a migration holds its lock right now."""

    revision: str | None
    migrating: bool


@dataclass(frozen=True, slots=True)
class StaleEmbedding:
    """A row of memex.stale_embeddings: a memory whose vector is of another model."""

    memory_id: UUID
    content: str
    embedding_model: str


@dataclass(frozen=True, slots=True)
class ModelCount:
    """A row of memex.embedding_models."""

    embedding_model: str
    memories: int


@dataclass(frozen=True, slots=True)
class ReembedPage:
    """One page of AsyncMemex.reembed_page: memories found with another model's vector,
    those written (the others changed meanwhile), and the `after` of the next page (None:
    this was the last)."""

    seen: int
    written: int
    next_after: UUID | None


@dataclass(frozen=True, slots=True)
class Embeddings:
    """Vectors of texts (AsyncMemex.embed_texts): one row per text, `model` that made
    them, and the texts' tokens as that model's tokenizer counts them."""

    vectors: Any  # float32 numpy array of shape (texts, dim), unit rows
    model: str
    tokens: int


@dataclass(frozen=True, slots=True)
class KeyScope:
    """What every view of an API key shows: which key, and what it may reach."""

    id: UUID
    prefix: str
    name: str
    agent_id: str | None
    user_ids: list[str] | None
    access: str
    created_at: datetime
    expires_at: datetime | None


@dataclass(frozen=True, slots=True)
class CreatedKey(KeyScope):
    """A new API key (memex.create_key): `token` is shown this once."""

    token: str


@dataclass(frozen=True, slots=True)
class ApiKey(KeyScope):
    """An API key as memex.list_keys shows it (never its secret)."""

    created_by: str
    revoked_at: datetime | None
    last_used_at: datetime | None


@dataclass(frozen=True, slots=True)
class RevokedKey:
    """The key memex.revoke_key revoked."""

    id: UUID
    prefix: str
    agent_id: str | None
    access: str
    revoked_at: datetime


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One entry of memex.audit_log."""

    id: int
    at: datetime
    actor: str
    action: str
    agent_id: str | None
    user_id: str | None
    details: dict[str, Any]


@dataclass(frozen=True, slots=True)
class MemoryPage:
    """A page of memex.list_memories, newest first; `next_cursor` (None: the last page)
    is the `cursor` argument of the next call."""

    memories: list[Memory]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class ExportRow(Memory):
    """A row of memex.export_memories: every field of a memory, the embedding optional."""

    embedding: Any = None  # the vector (pgvector's Vector or a numpy array), or None
    path: str | None = None  # a file's path (files are memories with a path)
    actor: str | None = None  # who wrote the memory
    # a consolidation restore that sticks: when the memory was restored (issue 36)
    restored_at: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        """The row as one line of an export (JSON Lines): timestamps in ISO 8601 with
        their microseconds, the embedding as a list of floats, present only if exported."""
        record: dict[str, Any] = {
            "record": "memory",
            "id": str(self.id),
            "agent_id": self.agent_id,
            "user_id": self.user_id,
            "memory_type": str(self.memory_type),
            "content": self.content,
            "importance": self.importance,
            "metadata": self.metadata,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "expires_at": self.expires_at.isoformat() if self.expires_at else None,
            "embedding_model": self.embedding_model,
        }
        # consolidation's lineage, only where there is some (older exports lack it)
        if self.source_ids:
            record["source_ids"] = [str(i) for i in self.source_ids]
        if self.archived_at is not None:
            record["archived_at"] = self.archived_at.isoformat()
            record["superseded_by"] = str(self.superseded_by) if self.superseded_by else None
        # time (issue 36), only where set: validity, supersession, a sticking restore
        for name in ("valid_from", "valid_to", "superseded_at", "restored_at"):
            value = getattr(self, name)
            if value is not None:
                record[name] = value.isoformat()
        if self.superseded_by is not None:
            record["superseded_by"] = str(self.superseded_by)
        if self.supersedes:
            record["supersedes"] = [str(i) for i in self.supersedes]
        if self.path is not None:
            record["path"] = self.path
        if self.actor is not None:
            record["actor"] = self.actor
        if self.embedding is not None:
            vector = self.embedding
            values = vector.to_list() if hasattr(vector, "to_list") else list(vector)
            record["embedding"] = [float(x) for x in values]
        return record


@dataclass(frozen=True, slots=True)
class HistoryRow:
    """A row of memex.export_history: a file revision, an access-log entry or a
    consolidation run (`kind`), its id in the exporting database (the page's cursor) and
    the row as JSON without that id."""

    kind: str
    id: int
    record: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """The row as one line of an export: {"record": kind, every column but the id}."""
        return {"record": self.kind, **self.record}


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import did: records inserted and skipped (their id, or for history the
    same entry, existed already), memories embedded again (no embedding, or one from
    another model), the inserted and skipped counts per kind of record (memory,
    file_revision, access, consolidation_run), and how many of the import's access-log
    entries are older than the access-log retention window
    (settings.access_log_retention_days): the next maintenance prunes them, as it prunes
    live entries that old."""

    imported: int
    skipped: int
    reembedded: int
    kinds: dict[str, dict[str, int]] = field(default_factory=dict)
    access_log_expiring: int = 0


@dataclass(frozen=True, slots=True)
class ErasedRows:
    """One row of memex.erase_user: a table and the rows of the user deleted from it."""

    table_name: str
    deleted: int


@dataclass(frozen=True, slots=True)
class File:
    """A file (SQL type memex.file_record): content is the whole file or the lines asked for."""

    path: str
    memory_id: UUID
    revision: int
    size: int
    line_count: int
    from_line: int
    to_line: int
    content: str
    created_at: datetime
    updated_at: datetime
    actor: str | None


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One file of memex.list_files (SQL type memex.file_entry)."""

    path: str
    memory_id: UUID
    revision: int | None
    size: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class MemoryRevision:
    """One row of memex.memory_revisions: a memory's state after one change (issue 36)."""

    id: int
    agent_id: str
    user_id: str
    memory_id: UUID
    revision: int
    operation: str
    changed: list[str]
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


@dataclass(frozen=True, slots=True)
class FileRevision:
    """One row of memex.file_revisions (content None in lists and for a delete)."""

    id: int
    agent_id: str
    user_id: str
    path: str
    memory_id: UUID | None
    revision: int
    operation: str
    actor: str
    at: datetime
    content: str | None
    size: int
    details: dict[str, Any]


@dataclass(frozen=True, slots=True)
class SmartRead:
    """memex.smart_read: one context block, its length, the budget and what went in."""

    context: str
    chars: int
    budget: int
    sources: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Passage:
    """One row of memex.search_passages: a memory, or the best paragraph of a file."""

    rank: int
    path: str | None
    memory_id: UUID
    from_line: int | None
    to_line: int | None
    passage: str
    score: float
    truncated: bool


@dataclass(frozen=True, slots=True)
class AccessEvent:
    """One entry of memex.access_log."""

    id: int
    at: datetime
    agent_id: str
    user_id: str
    actor: str
    operation: str
    target: str | None
    details: dict[str, Any]


@dataclass(frozen=True, slots=True)
class PatchPreview:
    """memex.preview_patch: the file's current revision (0: absent) and patched content."""

    revision: int
    content: str


@dataclass(frozen=True, slots=True)
class DreamPlan:
    """A row of memex.dream_plan: the files the next dream over a tenant reads."""

    agent_id: str
    user_id: str
    files: list[dict[str, Any]]  # {path, revision, content}


@dataclass(frozen=True, slots=True)
class ConsolidationRun:
    """A row of memex.consolidation_runs (or a plan: id None, status dry_run or nothing)."""

    id: int | None
    agent_id: str
    user_id: str
    kind: str
    status: str
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


@dataclass(frozen=True, slots=True)
class SkippedStep:
    """A step of a tenant's run-now that did not run, and why (e.g. the scheduler held
    the tenant's consolidation lock)."""

    step: str  # condense | dream
    reason: str


@dataclass(frozen=True, slots=True)
class RunNowResult:
    """POST /v1/admin/dream/run: the runs (plans when dry_run), and the steps of a
    tenant's run that were skipped because another runner held the tenant (empty for a
    tick). The in-process memexdb.agentic RUN_NOW answers the same two fields."""

    runs: list[ConsolidationRun]
    skipped: list[SkippedStep]


@dataclass(frozen=True, slots=True)
class DreamUser:
    """A row of memex.dream_users: one tenant's consolidation status."""

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


@dataclass(frozen=True, slots=True)
class AgentStats:
    """A row of memex.agent_stats: one agent, its users and what they hold."""

    agent_id: str
    users: int
    episodic: int
    semantic: int
    procedural: int
    archived: int
    expired: int
    files: int
    last_write_at: datetime | None


@dataclass(frozen=True, slots=True)
class UserStats:
    """A row of memex.user_stats: one user of an agent and what it holds."""

    agent_id: str
    user_id: str
    episodic: int
    semantic: int
    procedural: int
    archived: int
    expired: int
    files: int
    last_write_at: datetime | None
    dream_paused: bool
