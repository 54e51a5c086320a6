"""The typed Python API over the SQL API: one embedding call, one SQL statement.

`AsyncMemex` serves the REST and MCP frontends and asyncio applications; `Memex` is the
same API for synchronous code (each method runs AsyncMemex's on a private event loop, so
there is one body per operation). Arguments are checked against the domains' models (the
bounds the frontends publish) before anything is embedded; neither class ranks, filters
or limits anything itself: that is memex.* in SQL.
"""

from __future__ import annotations

import contextlib
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from datetime import datetime
from typing import Any, ParamSpec, TypeVar, cast
from uuid import UUID

from memexdb_client._sync import LoopThread, blocking
from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from memexdb import metrics, moving
from memexdb.consolidation import operations as consolidation
from memexdb.consolidation import sql as consolidation_sql
from memexdb.consolidation.models import DEFAULT_RUNS_LIMIT, DreamConfigOut, encode_tenant_cursor
from memexdb.core import sql as core_sql
from memexdb.embedding import BatchingEmbedder, Embedder
from memexdb.embeddings import operations as embeddings
from memexdb.embeddings import sql as embeddings_sql
from memexdb.embeddings.models import DEFAULT_REEMBED_BATCH, REEMBED_BATCH_MAX
from memexdb.error_models import validated
from memexdb.errors import InvalidArgument
from memexdb.fields import TenantQuery
from memexdb.files import operations as files
from memexdb.files.models import (
    DEFAULT_ACCESS_LOG_LIMIT,
    DEFAULT_FILE_LIST_LIMIT,
    DEFAULT_PASSAGE_CHARS,
    DEFAULT_PASSAGES_TOP_K,
    DEFAULT_SMART_READ_BUDGET,
    PassageSearchRequest,
)
from memexdb.files.passages import ranked_passages
from memexdb.health import sql as health_sql
from memexdb.health.models import BlockedLock
from memexdb.keys import operations as keys
from memexdb.keys.models import DEFAULT_AUDIT_LIMIT
from memexdb.llm import ChatModel
from memexdb.memories import operations as memories
from memexdb.memories.models import (
    DEFAULT_ALPHA,
    DEFAULT_EXPORT_BATCH,
    DEFAULT_HALF_LIFE_DAYS,
    DEFAULT_IMPORTANCE,
    DEFAULT_LIST_LIMIT,
    DEFAULT_MEMORY_TYPE,
    DEFAULT_MODE,
    DEFAULT_TOP_K,
    MemoryBatchCreate,
    MemoryCreate,
    MemoryStore,
)
from memexdb.operation import Operation
from memexdb.paging import next_key
from memexdb.session import Session
from memexdb.types import (
    Access,
    AccessEvent,
    AgentStats,
    ApiKey,
    AuditEvent,
    ConsolidationRun,
    CreatedKey,
    DreamPlan,
    DreamUser,
    EmbedBatch,
    Embeddings,
    EmbedQueueDepth,
    ExportRow,
    File,
    FileEntry,
    FileRevision,
    ImportResult,
    MaintenanceResult,
    Memory,
    MemoryPage,
    MemoryRevision,
    MemoryType,
    MetricFigure,
    ModelCount,
    Passage,
    QueuedMemory,
    ReembedPage,
    RevokedKey,
    SchemaState,
    SearchHit,
    SearchMode,
    SmartRead,
    StaleEmbedding,
    UserStats,
)

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _given(arguments: dict[str, Any]) -> dict[str, Any]:
    """A method's arguments (its `locals()` on entry) as the values of its request."""
    return {name: value for name, value in arguments.items() if name != "self"}


class AsyncMemex(Session):
    """Async client: `await AsyncMemex.connect(dsn)`, then store/search/forget/count.

    `with_key(key)` and `as_operator(name)` return clients of the same pool and embedder
    that act as someone else (see memexdb.session.Credentials)."""

    async def run(self, operation: Operation[Any, _R], request: Any) -> _R:
        """Run `operation` on a request already validated (what the frontends call)."""
        result: _R = await operation.run(self, request)
        return result

    async def call(self, operation: Operation[Any, _R], /, **values: Any) -> _R:
        """Run `operation` on Python values: validated once (InvalidArgument naming the
        first bad field), then run. The typed methods below are this, one line each."""
        return await self.run(operation, operation.validate(values))

    async def store(
        self,
        agent_id: str,
        user_id: str,
        content: str,
        *,
        memory_type: MemoryType | str = DEFAULT_MEMORY_TYPE,
        importance: float = DEFAULT_IMPORTANCE,
        metadata: dict[str, Any] | None = None,
        expires_at: datetime | None = None,
        created_at: datetime | None = None,
        id: UUID | None = None,
        supersedes: Sequence[UUID] | None = None,
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
    ) -> Memory:
        """Embed `content` and store it as a memory of tenant (agent_id, user_id). With
        `id`, a repeat of the same memory returns the stored one (a retry stores once);
        another memory with that id raises Conflict. `supersedes`: the older memories this
        one is a newer version of (they leave the default search); `valid_from` /
        `valid_to`: when the fact held."""
        values = _given(locals())
        if supersedes is not None:
            values["supersedes"] = list(supersedes)
        return await self.call(memories.STORE, **values)

    async def store_many(self, items: Sequence[MemoryCreate]) -> list[Memory]:
        """Embed and store many memories (`NewMemory` items) in one statement, all or
        nothing; returned in input order. With an `id` on every item, a repeat of the same
        memories returns the stored ones; another memory with one of the ids raises
        Conflict (and nothing is stored)."""
        if not items:
            raise InvalidArgument("memories", "must hold at least one memory")
        # NewMemory items checked themselves when they were built; a plain MemoryCreate
        # has no id (memories.store_many reads it with getattr)
        given = cast(list[MemoryStore], list(items))
        for i, item in enumerate(given):
            # memex.store_many takes no supersession or validity: refused, never dropped
            for name in ("supersedes", "valid_from", "valid_to"):
                if getattr(item, name, None) is not None:
                    raise InvalidArgument(f"memories[{i}].{name}", "only in a single store")
        batch = MemoryBatchCreate.model_construct(memories=given)
        return await self.run(memories.STORE_MANY, batch)

    async def search(
        self,
        agent_id: str,
        user_id: str,
        query: str,
        *,
        top_k: int = DEFAULT_TOP_K,
        alpha: float | None = DEFAULT_ALPHA,
        half_life_days: float | None = DEFAULT_HALF_LIFE_DAYS,
        memory_types: Sequence[MemoryType | str] | None = None,
        mode: SearchMode | str | None = DEFAULT_MODE,
        now: datetime | None = None,
        context_weight: float | None = None,
        metadata: dict[str, Any] | None = None,
        include_archived: bool = False,
        include_superseded: bool = False,
        as_of: datetime | None = None,
        valid_at: datetime | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
    ) -> list[SearchHit]:
        """Rank the tenant's memories for `query`; see memex.search for the formula.
        `metadata` keeps only memories whose metadata contains that object, before
        ranking; `include_archived` ranks the memories consolidation archived too;
        `include_superseded` the memories a newer version superseded (after it);
        `now` ranks as of that time; `as_of` answers with what the memory held then;
        `valid_at` keeps the facts valid at that moment; created_after <= created_at <
        created_before."""
        values = _given(locals())
        if memory_types is not None:
            values["memory_types"] = list(memory_types)
        return await self.call(memories.SEARCH, **values)

    async def forget(self, agent_id: str, user_id: str, memory_id: UUID) -> Memory:
        """Delete one memory of the tenant; raises NotFound if it is not theirs."""
        return await self.call(memories.FORGET, **_given(locals()))

    async def count(
        self,
        agent_id: str,
        user_id: str,
        memory_type: MemoryType | str | None = None,
        *,
        metadata: dict[str, Any] | None = None,
    ) -> int:
        """Number of live memories of the tenant (optionally of one type, and whose
        metadata contains `metadata`) that a search with this client's embedding model
        can find."""
        return await self.call(memories.COUNT, **_given(locals()))

    async def get(
        self, agent_id: str, user_id: str, memory_id: UUID, *, as_of: datetime | None = None
    ) -> Memory:
        """One memory of the tenant by id (with `as_of`: as it was at that moment); raises
        NotFound if it is not theirs (or did not exist then)."""
        return await self.call(memories.GET, **_given(locals()))

    async def list_memories(
        self,
        agent_id: str,
        user_id: str,
        *,
        limit: int = DEFAULT_LIST_LIMIT,
        cursor: str | None = None,
        memory_type: MemoryType | str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        metadata: dict[str, Any] | None = None,
        include_archived: bool = False,
    ) -> MemoryPage:
        """A page of the tenant's live memories, newest first. Pass the page's
        `next_cursor` as `cursor` for the next page (None: there is none). Filters: one
        type, created_after <= created_at < created_before, metadata containment;
        `include_archived` lists the memories consolidation archived too."""
        return await self.call(memories.LIST, **_given(locals()))

    async def update(
        self,
        agent_id: str,
        user_id: str,
        memory_id: UUID,
        *,
        content: str | None = None,
        importance: float | None = None,
        metadata: dict[str, Any] | None = None,
        memory_type: MemoryType | str | None = None,
        expires_at: datetime | None = None,
        clear_expires_at: bool = False,
        supersedes: Sequence[UUID] | None = None,
        valid_from: datetime | None = None,
        valid_to: datetime | None = None,
        clear_valid_to: bool = False,
    ) -> Memory:
        """Change the given fields of one live memory of the tenant (None: unchanged) and
        return it. A new `content` is embedded again; `metadata` replaces the whole
        object; `clear_expires_at` removes the expiry. Raises NotFound if the id is not
        theirs, InvalidArgument if nothing would change."""
        # None is "unchanged" here; in the request, a field left out is (null clears)
        values = {k: v for k, v in _given(locals()).items() if v is not None}
        del values["clear_expires_at"], values["clear_valid_to"]
        if clear_expires_at:
            if expires_at is not None:
                raise InvalidArgument("expires_at", "cannot be set and cleared at once")
            values["expires_at"] = None
        if clear_valid_to:
            if valid_to is not None:
                raise InvalidArgument("valid_to", "cannot be set and cleared at once")
            values["valid_to"] = None
        if supersedes is not None:
            values["supersedes"] = list(supersedes)
        if values.keys() <= {"agent_id", "user_id", "memory_id"}:
            raise InvalidArgument("patch", "must change at least one field")
        return await self.call(memories.UPDATE, **values)

    async def memory_history(
        self,
        agent_id: str,
        user_id: str,
        memory_id: UUID,
        *,
        limit: int = DEFAULT_LIST_LIMIT,
        before: int | None = None,
    ) -> list[MemoryRevision]:
        """The revisions of one memory of the tenant, newest first (each a full snapshot:
        every change leaves one); `before` (a revision number) for the next page."""
        return await self.call(memories.HISTORY, **_given(locals()))

    async def memory_revision_diff(
        self, agent_id: str, user_id: str, memory_id: UUID, from_revision: int, to_revision: int
    ) -> dict[str, Any]:
        """What changed in a memory between two revisions: {"content": a unified diff,
        "fields": {field: {"from", "to"}}} (memex.diff_memory_revisions)."""
        return await self.call(memories.REVISION_DIFF, **_given(locals()))

    async def revert_memory(
        self, agent_id: str, user_id: str, memory_id: UUID, revision: int
    ) -> Memory:
        """Make what a memory said at `revision` current again (a new 'revert' revision;
        a changed content is embedded again by the embed worker)."""
        return await self.call(memories.REVERT, **_given(locals()))

    async def erase_user(self, agent_id: str, user_id: str, *, confirm: str) -> dict[str, int]:
        """Delete everything of tenant (agent_id, user_id) in every table (archived and
        expired memories, files, revisions, access log, runs); returns the rows deleted
        per table. Admin callers only; `confirm` must repeat `user_id` (InvalidArgument
        naming `confirm` otherwise)."""
        return await self.call(memories.ERASE_USER, **_given(locals()))

    async def export_page(
        self,
        agent_id: str,
        user_id: str | None = None,
        *,
        embeddings: bool = False,
        after: moving.ExportCursor = None,
        limit: int = DEFAULT_EXPORT_BATCH,
    ) -> tuple[list[ExportRow], moving.ExportCursor]:
        """One page of an export (see `export`) and the `after` of the next page (None:
        this was the last)."""
        return await moving.export_page(
            self, agent_id, user_id, embeddings=embeddings, after=after, limit=limit
        )

    async def export(
        self,
        agent_id: str,
        user_id: str | None = None,
        *,
        embeddings: bool = False,
        batch_size: int = DEFAULT_EXPORT_BATCH,
    ) -> AsyncIterator[dict[str, Any]]:
        """The agent's user's (or all its users') whole memory as JSON-ready dicts, one
        line of `memexdb export` each (memexdb.export_format): a header, every memory
        (archived ones and files too, oldest first per user), then the file revisions,
        the access log and the consolidation runs, read `batch_size` at a time; with
        `embeddings`, each memory carries its vector."""
        async for record in moving.export_records(
            self, agent_id, user_id, embeddings=embeddings, batch_size=batch_size
        ):
            yield record

    async def import_memories(
        self,
        records: Iterable[dict[str, Any]] | AsyncIterable[dict[str, Any]],
        *,
        batch_size: int = DEFAULT_EXPORT_BATCH,
    ) -> ImportResult:
        """Insert the records of an export (dicts as `export` yields them, a version-1
        export's memories too) keeping ids, timestamps and history, `batch_size` per
        statement. A memory whose id exists already is skipped before it is embedded; a
        new one without an embedding, or with one from another model than this client's,
        is embedded again. History (file revisions, access log, consolidation runs) needs
        admin access to its tenant; an entry recorded already is skipped. Each batch
        commits on its own: re-running an import that failed part-way skips what it had
        already inserted. Raises InvalidArgument naming the record, `records[n]`."""
        return await moving.Importer(self, batch_size).run(records)

    async def ping(self) -> None:
        """Raise DatabaseUnavailable unless the database answers."""
        await self.fetch(None, core_sql.PING, enter=False)

    async def metrics_snapshot(self) -> list[MetricFigure]:
        """The database's figures for GET /metrics (memex.metrics_snapshot; operator)."""
        return await self.fetch(MetricFigure, health_sql.METRICS_SNAPSHOT)

    async def schema_state(self) -> SchemaState:
        """The schema's revision and whether a migration runs now (readiness; no caller
        needed)."""
        rows: list[SchemaState] = await self.fetch(
            SchemaState, health_sql.SCHEMA_STATE, enter=False
        )
        return rows[0]

    async def lock_waits(self) -> list[BlockedLock]:
        """The sessions waiting now for a lock on a memex table and who blocks them
        (memex.lock_waits; readiness, no caller needed)."""
        return await self.fetch(BlockedLock, health_sql.LOCK_WAITS, enter=False)

    async def maintenance(self) -> MaintenanceResult:
        """Run memex.maintenance(): delete expired memories and stale rate-limit rows, and
        move tenants grown past exact_scan_max_rows into the ANN index."""
        rows: list[MaintenanceResult] = await self.fetch(MaintenanceResult, health_sql.MAINTENANCE)
        return rows[0]

    async def embed_queued(self) -> EmbedBatch:
        """Take, embed and store one batch of memex.embed_queue (operator; what the
        service's embed worker runs): in one transaction, memex.embed_queue_take locks
        the due entries, their contents are embedded in full, memex.set_embeddings
        stores each vector whose memory still has that content (and dequeues it), and
        memex.embed_queue_failed backs off the entries whose embedding failed. If the
        process dies first, the transaction is rolled back: every entry stays queued."""
        async with self.connection() as conn:
            cur = conn.cursor(row_factory=class_row(QueuedMemory))
            with metrics.sql_call(embeddings_sql.EMBED_QUEUE_TAKE):
                rows = await (await cur.execute(embeddings_sql.EMBED_QUEUE_TAKE)).fetchall()
            if not rows:
                return EmbedBatch(0, 0, 0)
            done, failed = await self._embed_each(rows)
            written = 0
            if done:
                with metrics.sql_call(embeddings_sql.SET_EMBEDDINGS):
                    result = await conn.execute(
                        embeddings_sql.SET_EMBEDDINGS,
                        {
                            "ids": [row.memory_id for row, _ in done],
                            "contents": [row.content for row, _ in done],
                            "embeddings": [vector for _, vector in done],
                            "embedding_model": self.model_id,
                        },
                    )
                    written = int((await result.fetchone() or (0,))[0])
            if failed:
                with metrics.sql_call(embeddings_sql.EMBED_QUEUE_FAILED):
                    await conn.execute(
                        embeddings_sql.EMBED_QUEUE_FAILED,
                        {
                            "ids": [row.memory_id for row, _ in failed],
                            "errors": [e for _, e in failed],
                        },
                    )
            errors = tuple(f"{r.memory_id} (attempt {r.attempts + 1}): {e}" for r, e in failed)
            return EmbedBatch(len(rows), written, len(failed), errors)

    async def _embed_each(
        self, rows: list[QueuedMemory]
    ) -> tuple[list[tuple[QueuedMemory, Any]], list[tuple[QueuedMemory, str]]]:
        """Embed a batch; if that fails, each memory alone, so that one text the model
        cannot take does not hold the others back."""
        try:
            vectors = await self.embedder.embed_in_full([r.content for r in rows])
            return list(zip(rows, vectors, strict=True)), []
        except Exception as exc:
            if len(rows) == 1:
                return [], [(rows[0], f"{type(exc).__name__}: {exc}")]
        done: list[tuple[QueuedMemory, Any]] = []
        failed: list[tuple[QueuedMemory, str]] = []
        for row in rows:
            try:
                done.append((row, (await self.embedder.embed_in_full([row.content]))[0]))
            except Exception as exc:
                failed.append((row, f"{type(exc).__name__}: {exc}"))
        return done, failed

    async def embed_texts(
        self, texts: str | Sequence[str], *, model: str | None = None
    ) -> Embeddings:
        """Vectors of `texts` by this client's embedding model (POST /v1/embeddings), in
        full however long (memexdb.embedding.long_text: a text that fits the model's
        window gets exactly the vector `store` gives it). `model`, if given, must be this
        client's model id. Any caller may (read access is enough); each call counts as a
        read against the caller's rate limit."""
        given = texts if isinstance(texts, str) else list(texts)
        return await self.call(embeddings.EMBED, input=given, model=model)

    async def embedding_models(self) -> dict[str, int]:
        """How many memories carry vectors of each embedding model, most first (operator)."""
        rows: list[ModelCount] = await self.fetch(ModelCount, embeddings_sql.EMBEDDING_MODELS)
        return {row.embedding_model: row.memories for row in rows}

    async def embed_queue_depth(self) -> EmbedQueueDepth:
        """The embed queue: entries queued, due, failing; oldest and next due (operator)."""
        rows: list[EmbedQueueDepth] = await self.fetch(
            EmbedQueueDepth, embeddings_sql.EMBED_QUEUE_DEPTH
        )
        return rows[0]

    async def reembed_page(
        self, after: UUID | None = None, *, limit: int = DEFAULT_REEMBED_BATCH
    ) -> ReembedPage:
        """One page of `memexdb reembed` (operator): the next `limit` memories after
        `after` (in id order) whose vector is not from this client's model, embedded in
        full and stored unless their content changed meanwhile. Start with None and pass
        `next_after` until it is None; starting over later resumes (only what is still
        stale is found)."""
        if not 1 <= limit <= REEMBED_BATCH_MAX:
            raise InvalidArgument("limit", f"must be 1 to {REEMBED_BATCH_MAX}")
        rows: list[StaleEmbedding] = await self.fetch(
            StaleEmbedding,
            embeddings_sql.STALE_EMBEDDINGS,
            {"embedding_model": self.model_id, "after": after, "limit": limit},
        )
        if not rows:
            return ReembedPage(0, 0, None)
        vectors = await self.embedder.embed_in_full([r.content for r in rows])
        written = await self.fetch(
            None,
            embeddings_sql.SET_EMBEDDINGS,
            {
                "ids": [r.memory_id for r in rows],
                "contents": [r.content for r in rows],
                "embeddings": list(vectors),
                "embedding_model": self.model_id,
            },
        )
        return ReembedPage(
            len(rows), int(written[0]), next_key(rows, limit, lambda row: row.memory_id)
        )

    async def set_setting(self, name: str, value: Any) -> None:
        """Write an operator setting (memex.settings), e.g. rate_limit_store_per_minute."""
        await self.fetch(None, health_sql.SET_SETTING, {"name": name, "value": Jsonb(value)})

    async def create_key(
        self,
        access: Access | str,
        *,
        agent_id: str | None = None,
        user_ids: Sequence[str] | None = None,
        name: str = "",
        expires_at: datetime | None = None,
    ) -> CreatedKey:
        """Create an API key (admin callers only, within their own scope); its token is
        in the result, and nowhere else ever again."""
        return await self.call(keys.CREATE_KEY, **_given(locals()))

    async def list_keys(self, agent_id: str | None = None) -> list[ApiKey]:
        """The API keys this (admin) caller may manage, newest first, without secrets."""
        return await self.call(keys.LIST_KEYS, **_given(locals()))

    async def revoke_key(self, key: str, confirm_last: bool = False) -> RevokedKey:
        """Revoke an API key by id or prefix; NotFound outside this caller's scope,
        Conflict for the last live key of the scope unless confirm_last."""
        return await self.call(keys.REVOKE_KEY, **_given(locals()))

    async def audit_events(
        self, limit: int = DEFAULT_AUDIT_LIMIT, before: int | None = None
    ) -> list[AuditEvent]:
        """The audit log within this (admin) caller's scope, newest first."""
        return await self.call(keys.AUDIT_EVENTS, **_given(locals()))

    # --- File memory: a file is a memory with a virtual path (memexdb.files) ---

    async def write_file(
        self,
        agent_id: str,
        user_id: str,
        path: str,
        content: str,
        *,
        base_revision: int | None = None,
    ) -> File:
        """Create or overwrite the file at `path` (embedded, so search ranks it). With
        `base_revision` (0: the file must not exist), Conflict if the file moved on."""
        return await self.call(files.WRITE, **_given(locals()))

    async def read_file(
        self,
        agent_id: str,
        user_id: str,
        path: str,
        *,
        from_line: int | None = None,
        to_line: int | None = None,
        as_of: datetime | None = None,
    ) -> File:
        """The file at `path`: whole, lines from_line..to_line (1-based, inclusive), or as
        it was at `as_of`. NotFound if there is no such file (then)."""
        return await self.call(files.READ, **_given(locals()))

    async def list_files(
        self,
        agent_id: str,
        user_id: str,
        *,
        prefix: str | None = None,
        limit: int = DEFAULT_FILE_LIST_LIMIT,
        after: str | None = None,
    ) -> tuple[list[FileEntry], str | None]:
        """A page of the tenant's files under `prefix`, in path order, and the `after` of
        the next page (None: this is the last)."""
        return await self.call(files.LIST, **_given(locals()))

    async def patch_file(
        self,
        agent_id: str,
        user_id: str,
        path: str,
        *,
        heading: str | None = None,
        append: str | None = None,
        old_text: str | None = None,
        new_text: str | None = None,
        base_revision: int | None = None,
    ) -> File:
        """Append `append` under the markdown `heading` (created if absent; no heading:
        at the end), or replace the one occurrence of `old_text` with `new_text`
        (InvalidArgument if it is absent or occurs more than once). The patched content is
        computed in SQL (memex.preview_patch), embedded, and stored by memex.patch_file if
        the file has not moved on meanwhile (retried; with `base_revision`, Conflict)."""
        # None is "left out" here; in the request, a text field may not be null
        values = {k: v for k, v in _given(locals()).items() if v is not None}
        return await self.call(files.PATCH, **values)

    async def delete_file(
        self, agent_id: str, user_id: str, path: str, *, base_revision: int | None = None
    ) -> File:
        """Delete the file at `path` (its revisions stay; restore_revision brings it back)
        and return it as it was, with the number of the delete revision."""
        return await self.call(files.DELETE, **_given(locals()))

    async def list_revisions(
        self,
        agent_id: str,
        user_id: str,
        path: str,
        *,
        limit: int = DEFAULT_FILE_LIST_LIMIT,
        before: int | None = None,
    ) -> list[FileRevision]:
        """The revisions of a file, newest first, without content."""
        return await self.call(files.REVISIONS, **_given(locals()))

    async def get_revision(
        self, agent_id: str, user_id: str, path: str, revision: int
    ) -> FileRevision:
        """One revision of a file with its content (None for a delete)."""
        return await self.call(files.REVISION, **_given(locals()))

    async def diff_revisions(
        self, agent_id: str, user_id: str, path: str, from_revision: int, to_revision: int
    ) -> str:
        """A unified diff from one revision of a file to another, labelled
        `path@revision` (memex.diff_revisions: the text difflib.unified_diff writes; a
        delete is empty)."""
        return await self.call(files.DIFF, **_given(locals()))

    async def restore_revision(
        self,
        agent_id: str,
        user_id: str,
        path: str,
        revision: int,
        *,
        base_revision: int | None = None,
    ) -> File:
        """Make `revision` of a file its current content again (a new 'restore' revision;
        also brings back a deleted file)."""
        return await self.call(files.RESTORE, **_given(locals()))

    async def smart_read(
        self,
        agent_id: str,
        user_id: str,
        query: str,
        *,
        budget: int = DEFAULT_SMART_READ_BUDGET,
    ) -> SmartRead:
        """One context block of at most `budget` characters from the files and memories
        most relevant to `query`, each under a header naming its path or id."""
        return await self.call(files.SMART_READ, **_given(locals()))

    async def access_log(
        self,
        agent_id: str,
        user_id: str,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = DEFAULT_ACCESS_LOG_LIMIT,
        before: int | None = None,
    ) -> list[AccessEvent]:
        """The tenant's access log (every read and write of its files), newest first,
        since <= at < until; `before` (an id) for the next page."""
        return await self.call(files.ACCESS_LOG, **_given(locals()))

    # --- Access checks, and the passages of memory_search (its LLM answer, and
    # memorize, are one layer above this client) ---

    async def authenticate(self, *, admin: bool = False) -> None:
        """Raise Unauthenticated unless the caller's credentials are valid (memex._enter,
        the check every call makes, in one round trip); with `admin`, also Forbidden
        unless the caller is an admin of its whole scope (the admin console's rule)."""
        await self.fetch(None, core_sql.ADMIN_CALLER if admin else core_sql.PING)

    async def authorize(self, agent_id: str | None, user_id: str | None, need: str) -> None:
        """Raise Unauthenticated or Forbidden unless the caller may act on the tenant with
        `need` access (read, write or admin); None: every agent / every user."""
        await self.fetch(
            None, core_sql.AUTHORIZE, {"agent_id": agent_id, "user_id": user_id, "need": need}
        )

    async def passages(
        self,
        agent_id: str,
        user_id: str,
        query: str,
        *,
        top_k: int = DEFAULT_PASSAGES_TOP_K,
        passage_chars: int = DEFAULT_PASSAGE_CHARS,
    ) -> list[Passage]:
        """memex.search_passages: files and memories ranked for `query` (BM25 fused with
        vectors), each cut to a passage (a file's best paragraph, with its lines)."""
        request = validated(
            PassageSearchRequest,
            agent_id=agent_id,
            user_id=user_id,
            query=query,
            top_k=top_k,
            passage_chars=passage_chars,
        )
        return await ranked_passages(self, request)

    # --- Consolidation ("dreaming"): memex.consolidate_*, memex.dream_* ---

    async def consolidate(
        self,
        agent_id: str,
        user_id: str,
        *,
        dry_run: bool = False,
        force: bool = False,
        summary: str | None = None,
        source_ids: Sequence[UUID | str] | None = None,
    ) -> ConsolidationRun | None:
        """Condense the tenant's oldest episodic memories if it is due (`force`: even if
        not); see memex.consolidate_tenant. None when another runner holds the tenant.
        `summary` (with the `source_ids` it summarizes) replaces the extractive summary."""
        return await self._tenant_run(
            consolidation_sql.CONSOLIDATE_TENANT,
            agent_id,
            user_id,
            dry_run=dry_run,
            force=force,
            summary=summary,
            source_ids=[str(i) for i in source_ids] if source_ids is not None else None,
        )

    async def consolidate_due(self, *, dry_run: bool = False) -> list[ConsolidationRun]:
        """One consolidation tick over every tenant (admin); the runs (plans if dry_run)."""
        return await self.fetch(
            ConsolidationRun, consolidation_sql.CONSOLIDATE_DUE, {"dry_run": dry_run}
        )

    async def dream(
        self,
        agent_id: str,
        user_id: str,
        *,
        dry_run: bool = False,
        force: bool = False,
        edits: Sequence[Mapping[str, Any]] | None = None,
    ) -> ConsolidationRun | None:
        """Tidy the tenant's files if it is due (`force`: even if not): `edits` (over
        dream_plan: path, revision, old_text, new_text, reason) applied, duplicate lines
        and repeated headings merged, as dream-agent; see memex.dream_tenant. None when
        another runner holds the tenant."""
        return await self._tenant_run(
            consolidation_sql.DREAM_TENANT,
            agent_id,
            user_id,
            dry_run=dry_run,
            force=force,
            edits=Jsonb(list(edits)) if edits is not None else None,
        )

    async def _tenant_run(
        self, query: str, agent_id: str, user_id: str, **arguments: Any
    ) -> ConsolidationRun | None:
        """One tenant's consolidation run (or plan); None when another runner holds it."""
        validated(TenantQuery, agent_id=agent_id, user_id=user_id)
        rows: list[ConsolidationRun] = await self.fetch(
            ConsolidationRun, query, {"agent_id": agent_id, "user_id": user_id, **arguments}
        )
        run = rows[0] if rows else None
        return run if run is not None and run.status is not None else None

    async def dream_due(
        self, *, dry_run: bool = False, edits: Sequence[Mapping[str, Any]] | None = None
    ) -> list[ConsolidationRun]:
        """One tick of dreaming over files, every tenant (admin); the runs. `edits` as
        for dream, each with its tenant's agent_id and user_id."""
        return await self.fetch(
            ConsolidationRun,
            consolidation_sql.DREAM_DUE,
            {"dry_run": dry_run, "edits": Jsonb(list(edits)) if edits is not None else None},
        )

    async def dream_plan(
        self, agent_id: str | None = None, user_id: str | None = None, *, force: bool = False
    ) -> list[DreamPlan]:
        """The files the next dream reads: of the due tenants (admin), or of one."""
        if agent_id is not None or user_id is not None:
            validated(TenantQuery, agent_id=agent_id, user_id=user_id)
        return await self.fetch(
            DreamPlan,
            consolidation_sql.DREAM_PLAN,
            {"agent_id": agent_id, "user_id": user_id, "force": force},
        )

    async def restore_consolidation(self, run_id: int) -> ConsolidationRun:
        """Undo a condense run: its sources live again, its summary archived."""
        return await self.call(consolidation.RESTORE_CONSOLIDATION, **_given(locals()))

    async def dream_config(self) -> DreamConfigOut:
        """The consolidation settings (memex.dream_config). Any caller may read them
        here (the scheduler, the console of an agent's admin); GET /v1/admin/dream/config
        (consolidation.DREAM_CONFIG) is for admins of every agent."""
        return await consolidation.read_config(self)

    async def set_dream_config(self, /, **changes: Any) -> DreamConfigOut:
        """Change consolidation settings (admin); the whole configuration after."""
        return await self.call(consolidation.SET_DREAM_CONFIG, **changes)

    async def consolidation_runs(
        self,
        agent_id: str | None = None,
        user_id: str | None = None,
        *,
        limit: int = DEFAULT_RUNS_LIMIT,
        before: int | None = None,
    ) -> list[ConsolidationRun]:
        """Consolidation runs, newest first: of a tenant, an agent, or every tenant."""
        return await self.call(consolidation.CONSOLIDATION_RUNS, **_given(locals()))

    async def dream_users(
        self,
        agent_id: str | None = None,
        *,
        limit: int = DEFAULT_RUNS_LIMIT,
        after: tuple[str, str] | None = None,
    ) -> list[DreamUser]:
        """Each tenant's consolidation status (admin), in (agent_id, user_id) order after
        `after`."""
        cursor = encode_tenant_cursor(*after) if after is not None else None
        return await self.call(
            consolidation.DREAM_USERS, agent_id=agent_id, limit=limit, after=cursor
        )

    async def set_dream_paused(self, agent_id: str, user_id: str, paused: bool) -> bool:
        """Pause or resume consolidation of one tenant (admin, audited)."""
        return await self.call(consolidation.SET_DREAM_PAUSED, **_given(locals()))

    # --- Tenants at a glance (the admin console): memex.agent_stats, memex.user_stats ---

    async def agent_stats(
        self,
        agent_id: str | None = None,
        *,
        limit: int = DEFAULT_RUNS_LIMIT,
        after: str | None = None,
    ) -> list[AgentStats]:
        """Agents in agent_id order after `after` (admin; `agent_id`: that one only), each
        with its users and its memories by type, archived, expired and files."""
        return await self.fetch(
            AgentStats,
            health_sql.AGENT_STATS,
            {"agent_id": agent_id, "limit": limit, "after": after},
        )

    async def user_stats(
        self, agent_id: str, *, limit: int = DEFAULT_RUNS_LIMIT, after: str | None = None
    ) -> list[UserStats]:
        """The users of an agent in user_id order after `after` (admin of the agent), each
        with its memories by type, archived, expired, files and consolidation pause."""
        return await self.fetch(
            UserStats, health_sql.USER_STATS, {"agent_id": agent_id, "limit": limit, "after": after}
        )


class Memex:
    """Synchronous client with the same methods as AsyncMemex (`Memex.connect(dsn)`)."""

    def __init__(self, client: AsyncMemex, loop: LoopThread, *, owns_loop: bool = True) -> None:
        self._async = client
        self._loop = loop
        self._owns_loop = owns_loop
        self.model_id = client.model_id

    @classmethod
    def connect(
        cls,
        dsn: str,
        *,
        embedder: Embedder | BatchingEmbedder | None = None,
        max_size: int = 4,
        key: str | None = None,
        require_key: bool = False,
        llm: ChatModel | None = None,
    ) -> Memex:
        """Open a pool on a migrated database and check the embedder fits its schema."""
        loop = LoopThread("memexdb-sync")
        try:
            client = loop.run(
                AsyncMemex.connect(
                    dsn,
                    embedder=embedder,
                    max_size=max_size,
                    key=key,
                    require_key=require_key,
                    llm=llm,
                )
            )
        except BaseException:
            loop.stop()
            raise
        return cls(client, loop)

    def with_key(self, key: str | None) -> Memex:
        """This client acting with API key `key` (see AsyncMemex.with_key)."""
        return Memex(self._async.with_key(key), self._loop, owns_loop=False)

    def as_operator(self, name: str) -> Memex:
        """This client acting as the operator (see AsyncMemex.as_operator)."""
        return Memex(self._async.as_operator(name), self._loop, owns_loop=False)

    def delegated(self, actor: str) -> Memex:
        """This client's caller writing as one of memexdb's own agents (see
        AsyncMemex.delegated)."""
        return Memex(self._async.delegated(actor), self._loop, owns_loop=False)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Memex]:
        """This client with every call inside the block in one database transaction
        (see AsyncMemex.transaction)."""
        manager = self._async.transaction()
        bound = self._loop.run(manager.__aenter__())
        try:
            yield Memex(bound, self._loop, owns_loop=False)
        except BaseException as exc:
            if not self._loop.run(manager.__aexit__(type(exc), exc, exc.__traceback__)):
                raise
        else:
            self._loop.run(manager.__aexit__(None, None, None))

    def close(self) -> None:
        if not self._owns_loop:
            return
        try:
            self._loop.run(self._async.aclose())
        finally:
            self._loop.stop()

    def __enter__(self) -> Memex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    run = blocking(AsyncMemex.run)
    call = blocking(AsyncMemex.call)
    store = blocking(AsyncMemex.store)
    store_many = blocking(AsyncMemex.store_many)
    memory_history = blocking(AsyncMemex.memory_history)
    memory_revision_diff = blocking(AsyncMemex.memory_revision_diff)
    revert_memory = blocking(AsyncMemex.revert_memory)
    search = blocking(AsyncMemex.search)
    forget = blocking(AsyncMemex.forget)
    count = blocking(AsyncMemex.count)
    get = blocking(AsyncMemex.get)
    list_memories = blocking(AsyncMemex.list_memories)
    update = blocking(AsyncMemex.update)
    erase_user = blocking(AsyncMemex.erase_user)
    export_page = blocking(AsyncMemex.export_page)
    import_memories = blocking(AsyncMemex.import_memories)

    def export(
        self,
        agent_id: str,
        user_id: str | None = None,
        *,
        embeddings: bool = False,
        batch_size: int = DEFAULT_EXPORT_BATCH,
    ) -> Iterator[dict[str, Any]]:
        """AsyncMemex.export for synchronous code: an iterator of JSON-ready dicts."""
        records = moving.export_records(
            self._async, agent_id, user_id, embeddings=embeddings, batch_size=batch_size
        )

        async def step() -> dict[str, Any] | None:
            return await anext(records, None)

        try:
            while (record := self._loop.run(step())) is not None:
                yield record
        finally:
            self._loop.run(records.aclose())

    ping = blocking(AsyncMemex.ping)
    maintenance = blocking(AsyncMemex.maintenance)
    metrics_snapshot = blocking(AsyncMemex.metrics_snapshot)
    schema_state = blocking(AsyncMemex.schema_state)
    lock_waits = blocking(AsyncMemex.lock_waits)
    set_setting = blocking(AsyncMemex.set_setting)
    embed_queued = blocking(AsyncMemex.embed_queued)
    embed_texts = blocking(AsyncMemex.embed_texts)
    embedding_models = blocking(AsyncMemex.embedding_models)
    embed_queue_depth = blocking(AsyncMemex.embed_queue_depth)
    reembed_page = blocking(AsyncMemex.reembed_page)
    create_key = blocking(AsyncMemex.create_key)
    list_keys = blocking(AsyncMemex.list_keys)
    revoke_key = blocking(AsyncMemex.revoke_key)
    audit_events = blocking(AsyncMemex.audit_events)
    write_file = blocking(AsyncMemex.write_file)
    read_file = blocking(AsyncMemex.read_file)
    list_files = blocking(AsyncMemex.list_files)
    patch_file = blocking(AsyncMemex.patch_file)
    delete_file = blocking(AsyncMemex.delete_file)
    list_revisions = blocking(AsyncMemex.list_revisions)
    get_revision = blocking(AsyncMemex.get_revision)
    diff_revisions = blocking(AsyncMemex.diff_revisions)
    restore_revision = blocking(AsyncMemex.restore_revision)
    smart_read = blocking(AsyncMemex.smart_read)
    access_log = blocking(AsyncMemex.access_log)
    passages = blocking(AsyncMemex.passages)
    authenticate = blocking(AsyncMemex.authenticate)
    authorize = blocking(AsyncMemex.authorize)
    consolidate = blocking(AsyncMemex.consolidate)
    consolidate_due = blocking(AsyncMemex.consolidate_due)
    dream = blocking(AsyncMemex.dream)
    dream_due = blocking(AsyncMemex.dream_due)
    dream_plan = blocking(AsyncMemex.dream_plan)
    restore_consolidation = blocking(AsyncMemex.restore_consolidation)
    dream_config = blocking(AsyncMemex.dream_config)
    set_dream_config = blocking(AsyncMemex.set_dream_config)
    consolidation_runs = blocking(AsyncMemex.consolidation_runs)
    dream_users = blocking(AsyncMemex.dream_users)
    set_dream_paused = blocking(AsyncMemex.set_dream_paused)
    agent_stats = blocking(AsyncMemex.agent_stats)
    user_stats = blocking(AsyncMemex.user_stats)
