"""A user's whole memory moving: the export stream and the import of it (the format is
memexdb.export_format's). AsyncMemex.export and AsyncMemex.import_memories call these;
`memexdb export` / `import`, GET /v1/export and POST /v1/import call those.

An import keeps every id of a memory, so a record whose id exists already is skipped
before anything is embedded (memex.missing_memory_ids): re-importing an export embeds
nothing. A new memory keeps its exported vector when it has one of this client's model,
and is embedded again otherwise (none exported, or another model's). History (file
revisions, access log, consolidation runs, memory revisions) goes to SQL functions that
authorize themselves: admin access to each tenant (the operator, or an admin key of the
agent).

This module sends no SQL itself: each page and batch is an operation of
memexdb.memories.operations (EXPORT_PAGE, EXPORT_HISTORY, MISSING_MEMORY_IDS,
IMPORT_HISTORY, IMPORT_MEMORY_BATCH).
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterable
from datetime import UTC, datetime
from typing import Any, cast

from pydantic import BaseModel, ValidationError

from memexdb import export_format
from memexdb.error_models import invalid_argument
from memexdb.errors import InvalidArgument
from memexdb.memories import operations as memories
from memexdb.memories.models import ExportedMemory, MemoryIds, MemoryImport
from memexdb.session import Session
from memexdb.types import ExportRow, HistoryRow, ImportResult

HistoryCursor = memories.HistoryCursor
MODELS: dict[str, type[BaseModel]] = {
    "memory": ExportedMemory,
    **export_format.HISTORY_MODELS,
}


# where the next page of an export starts: (user_id, created_at, id) of the last row
ExportCursor = memories.ExportCursor


async def export_page(
    session: Session,
    agent_id: str,
    user_id: str | None,
    *,
    embeddings: bool,
    after: ExportCursor,
    limit: int,
) -> tuple[list[ExportRow], ExportCursor]:
    """One page of an export: the operation memories.EXPORT_PAGE."""
    return await memories.EXPORT_PAGE.call(
        session, agent_id=agent_id, user_id=user_id, embeddings=embeddings, after=after, limit=limit
    )


async def history_page(
    memex: Session,
    agent_id: str,
    user_id: str | None,
    after: HistoryCursor,
    limit: int,
    *,
    memory_revisions: bool = True,
) -> tuple[list[HistoryRow], HistoryCursor]:
    """One page of an export's history: the operation memories.EXPORT_HISTORY."""
    return await memories.EXPORT_HISTORY.call(
        memex,
        agent_id=agent_id,
        user_id=user_id,
        after=after,
        limit=limit,
        memory_revisions=memory_revisions,
    )


async def export_records(
    memex: Session,
    agent_id: str,
    user_id: str | None,
    *,
    embeddings: bool,
    batch_size: int,
    memory_revisions: bool = True,
) -> AsyncGenerator[dict[str, Any]]:
    """The lines of an export: the header, the memories, then the history (with
    `memory_revisions`, the memories' revisions last)."""
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
        history, cursor = await history_page(
            memex, agent_id, user_id, cursor, batch_size, memory_revisions=memory_revisions
        )
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
                "must be header, memory, file_revision, access, consolidation_run or"
                " memory_revision",
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
        self.access_log_expiring = 0

    async def run(self, records: Records) -> ImportResult:
        n = -1
        async for record in _each(records):
            n += 1
            await self.add(n, record)
        await self.flush()
        imported = sum(c["imported"] for c in self.kinds.values())
        skipped = sum(c["skipped"] for c in self.kinds.values())
        return ImportResult(
            imported, skipped, self.reembedded, self.kinds, self.access_log_expiring
        )

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
            done, expiring = await memories.IMPORT_HISTORY.call(
                self.memex, kind=self.kind, records=records
            )
            self.access_log_expiring += expiring  # old entries imported, pruned as live ones
        counts["imported"] += done
        counts["skipped"] += len(batch) - done

    async def _memories(self, numbered: list[tuple[int, Any]]) -> int:
        """Insert the batch's memories that do not exist yet; the number inserted."""
        ids = MemoryIds.model_construct(ids=[item.id for _, item in numbered])
        missing = set(await memories.MISSING_MEMORY_IDS.run(self.memex, ids))
        new = [(n, cast(ExportedMemory, item)) for n, item in numbered if item.id in missing]
        if not new:
            return 0
        batch = [item for _, item in new]
        try:
            new_memories = MemoryImport.model_construct(memories=batch)
            rows, again = await memories.IMPORT_MEMORY_BATCH.run(self.memex, new_memories)
        except InvalidArgument as exc:  # memories[i] of the statement: name the record
            match = re.fullmatch(r"memories\[(\d+)\](.*)", exc.field)
            if match is None:
                raise
            raise InvalidArgument(
                f"records[{new[int(match.group(1))][0]}]{match.group(2)}", exc.message
            ) from None
        self.reembedded += again
        return rows


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
