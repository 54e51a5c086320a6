"""A user's whole memory moving: the export stream and the import of it (the format is
memexdb.export_format's). AsyncMemex.export and AsyncMemex.import_memories call these;
`memexdb export` / `import`, GET /v1/export and POST /v1/import call those.

An import keeps every id of a memory, so a record whose id exists already is skipped
before anything is embedded (memex.missing_memory_ids): re-importing an export embeds
nothing. A new memory keeps its exported vector when it has one of this client's model,
and is embedded again otherwise (none exported, or another model's). History (file
revisions, access log, consolidation runs) goes to SQL functions that authorize
themselves: admin access to each tenant (the operator, or an admin key of the agent).
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterable
from datetime import UTC, datetime
from typing import Any, cast
from uuid import UUID

import numpy as np
from psycopg.types.json import Jsonb
from pydantic import BaseModel, ValidationError

from memexdb import export_format, metrics
from memexdb.consolidation import sql as consolidation_sql
from memexdb.error_models import invalid_argument, validated
from memexdb.errors import InvalidArgument
from memexdb.fields import TenantQuery
from memexdb.files import sql as files_sql
from memexdb.memories import operations as memories
from memexdb.memories import sql as memories_sql
from memexdb.memories.models import ExportedMemory
from memexdb.paging import next_key
from memexdb.session import Session, jsonb_or_none
from memexdb.types import ExportRow, HistoryRow, ImportResult, Memory

HistoryCursor = tuple[str, int] | None
MODELS: dict[str, type[BaseModel]] = {
    "memory": ExportedMemory,
    **export_format.HISTORY_MODELS,
}
_IMPORT_HISTORY = {
    "file_revision": files_sql.IMPORT_FILE_REVISIONS,
    "access": files_sql.IMPORT_ACCESS_LOG,
    "consolidation_run": consolidation_sql.IMPORT_CONSOLIDATION_RUNS,
}


# where the next page of an export starts: (user_id, created_at, id) of the last row
ExportCursor = tuple[str, datetime, UUID] | None


async def export_page(
    session: Session,
    agent_id: str,
    user_id: str | None,
    *,
    embeddings: bool,
    after: ExportCursor,
    limit: int,
) -> tuple[list[ExportRow], ExportCursor]:
    """One page of an export (AsyncMemex.export_page) and the `after` of the next page
    (None: this was the last)."""
    validated(TenantQuery, agent_id=agent_id, user_id=user_id or "-")
    rows: list[ExportRow] = await session.fetch(
        ExportRow,
        memories_sql.EXPORT_MEMORIES,
        {
            "agent_id": agent_id,
            "user_id": user_id,
            "include_embeddings": embeddings,
            "after_user_id": after[0] if after else None,
            "after_created_at": after[1] if after else None,
            "after_id": after[2] if after else None,
            "limit": limit,
        },
    )
    return rows, next_key(rows, limit, lambda row: (row.user_id, row.created_at, row.id))


async def history_page(
    memex: Session, agent_id: str, user_id: str | None, after: HistoryCursor, limit: int
) -> tuple[list[HistoryRow], HistoryCursor]:
    """One page of memex.export_history and the cursor of the next (None: the last)."""
    rows: list[HistoryRow] = await memex.fetch(
        HistoryRow,
        memories_sql.EXPORT_HISTORY,
        {
            "agent_id": agent_id,
            "user_id": user_id,
            "after_kind": after[0] if after else None,
            "after_id": after[1] if after else None,
            "limit": limit,
        },
    )
    return rows, next_key(rows, limit, lambda row: (row.kind, row.id))


async def export_records(
    memex: Session, agent_id: str, user_id: str | None, *, embeddings: bool, batch_size: int
) -> AsyncGenerator[dict[str, Any]]:
    """The lines of an export: the header, the memories, then the history."""
    # the first page is read before the header, so that a refused export yields nothing
    rows, after = await export_page(
        memex, agent_id, user_id, embeddings=embeddings, after=None, limit=batch_size
    )
    yield export_format.header(agent_id, user_id, datetime.now(UTC), memex.model_id)
    while True:
        for row in rows:
            yield row.to_json()
        if after is None:
            break
        rows, after = await export_page(
            memex, agent_id, user_id, embeddings=embeddings, after=after, limit=batch_size
        )
    cursor: HistoryCursor = None
    while True:
        history, cursor = await history_page(memex, agent_id, user_id, cursor, batch_size)
        for item in history:
            yield item.to_json()
        if cursor is None:
            return


Records = Iterable[dict[str, Any]] | AsyncIterable[dict[str, Any]]


async def _each(records: Records) -> AsyncIterator[dict[str, Any]]:
    if isinstance(records, AsyncIterable):
        async for record in records:
            yield record
    else:
        for record in records:
            yield record


def check_record(n: int, record: Any) -> tuple[str, BaseModel] | None:
    """Record n (from 0, the header included) checked: its kind and validated model, or
    None for the header. InvalidArgument naming `records[n]` otherwise."""
    if not isinstance(record, dict):
        raise InvalidArgument(f"records[{n}]", "is not a JSON object")
    kind = export_format.kind_of(record)
    try:
        if kind == "header":
            if n != 0:
                raise InvalidArgument(f"records[{n}].record", "a header is the first line")
            export_format.check_header(record)
            return None
        model = ExportedMemory if kind == "memory" else export_format.HISTORY_MODELS.get(kind)
        if model is None:
            raise InvalidArgument(
                f"records[{n}].record",
                "must be header, memory, file_revision, access or consolidation_run",
            )
        return kind, model.model_validate(record)
    except ValidationError as exc:
        error = invalid_argument(exc)
        raise InvalidArgument(f"records[{n}].{error.field}", error.message) from None
    except ValueError as exc:
        raise InvalidArgument(f"records[{n}].version", str(exc)) from None


class Importer:
    """Reads records one at a time, in batches of one kind, and inserts each batch in its
    own statement (and transaction): an import stopped part-way keeps what it had
    inserted, and running it again skips that. A bad record raises InvalidArgument
    naming it, `records[n]` (n from 0, the header included)."""

    def __init__(self, memex: Session, batch_size: int) -> None:
        self.memex = memex
        self.batch_size = batch_size
        self.kind: str | None = None
        self.batch: list[tuple[int, Any]] = []  # (record number, validated record)
        self.kinds: dict[str, dict[str, int]] = {}
        self.reembedded = 0

    async def run(self, records: Records) -> ImportResult:
        n = -1
        async for record in _each(records):
            n += 1
            await self.add(n, record)
        await self.flush()
        imported = sum(c["imported"] for c in self.kinds.values())
        skipped = sum(c["skipped"] for c in self.kinds.values())
        return ImportResult(imported, skipped, self.reembedded, self.kinds)

    async def add(self, n: int, record: Any) -> None:
        checked = check_record(n, record)
        if checked is None:
            return
        kind, item = checked
        if kind != self.kind or len(self.batch) == self.batch_size:
            await self.flush()
            self.kind = kind
        self.batch.append((n, item))

    async def flush(self) -> None:
        if not self.batch or self.kind is None:
            return
        batch, self.batch = self.batch, []
        counts = self.kinds.setdefault(self.kind, {"imported": 0, "skipped": 0})
        if self.kind == "memory":
            done = await self._memories(batch)
        else:
            records = [item.model_dump(mode="json", exclude={"record"}) for _, item in batch]
            found = await self.memex.fetch(
                None, _IMPORT_HISTORY[self.kind], {"records": Jsonb(records)}
            )
            done = int(found[0])
        counts["imported"] += done
        counts["skipped"] += len(batch) - done

    async def _memories(self, numbered: list[tuple[int, Any]]) -> int:
        """Insert the batch's memories that do not exist yet; the number inserted."""
        missing = set(
            await self.memex.fetch(
                None, memories_sql.MISSING_MEMORY_IDS, {"ids": [item.id for _, item in numbered]}
            )
        )
        new = [(n, cast(ExportedMemory, item)) for n, item in numbered if item.id in missing]
        if not new:
            return 0
        batch = [item for _, item in new]
        try:
            rows, again = await self._insert(batch)
        except InvalidArgument as exc:  # memories[i] of the statement: name the record
            match = re.fullmatch(r"memories\[(\d+)\](.*)", exc.field)
            if match is None:
                raise
            raise InvalidArgument(
                f"records[{new[int(match.group(1))][0]}]{match.group(2)}", exc.message
            ) from None
        self.reembedded += again
        return rows

    async def _insert(self, batch: list[ExportedMemory]) -> tuple[int, int]:
        memex = self.memex
        stale = [
            i
            for i, m in enumerate(batch)
            if m.embedding is None or m.embedding_model != memex.model_id
        ]
        vectors = [np.asarray(m.embedding or (), dtype=np.float32) for m in batch]
        reservation = None
        if stale:  # the batch's budget is paid before anything is embedded
            reservation = await memex.reserve("store", [(m.agent_id, m.user_id) for m in batch])
            fresh = await memex.embedder.embed_many([batch[i].content for i in stale])
            for i, vector in zip(stale, fresh, strict=True):
                vectors[i] = vector
        rows: list[Memory] = await memex.fetch(
            Memory,
            memories_sql.IMPORT_MEMORIES,
            {
                **memories.store_params(batch, vectors, memex.model_id),
                "ids": [m.id for m in batch],
                "updated_at": [m.updated_at for m in batch],
                "lineage": [jsonb_or_none(m.lineage()) for m in batch],
                "paths": [m.path for m in batch],
                "actors": [m.actor for m in batch],
                "access": "admin",
            },
            reservation=reservation,
        )
        metrics.count_by_type(metrics.MEMORIES_STORED, rows)
        # embedded again: the inserted ones only. An id another tenant holds is skipped by
        # memex.import_memories (ids are one namespace) after it was embedded, since
        # memex.missing_memory_ids cannot see it: counted as the caller's own existing id
        # is, skipped and not embedded, so the answer does not tell them apart.
        inserted = {row.id for row in rows}
        return len(rows), sum(1 for i in stale if batch[i].id in inserted)


def line_error(exc: InvalidArgument) -> InvalidArgument:
    """An import's error naming the line of the file or request body (record n is line
    n + 1: `records[2].importance` is `line 3 importance`); other errors as they are."""
    match = re.fullmatch(r"records\[(\d+)\]\.?(.*)", exc.field)
    if match is None:
        return exc
    where = f"line {int(match.group(1)) + 1}"
    return InvalidArgument(f"{where} {match.group(2)}".strip(), exc.message)


__all__ = [
    "HistoryCursor",
    "Importer",
    "check_record",
    "export_records",
    "history_page",
    "line_error",
]
