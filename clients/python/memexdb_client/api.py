"""The API shared by the in-process memexdb.AsyncMemex and the HTTP AsyncMemexClient:
code typed against AsyncMemoryAPI moves from one to the other by changing the line that
builds the client. mypy checks that both satisfy it (tests/test_python_client.py).

Left out, as the two differ there: `forget` (the service answers 204 without the
memory: the Protocol returns `Memory | None`), the LLM layer and the consolidation
settings (memexdb.agentic and pydantic models of the server in-process, JSON over HTTP),
`export`'s and `import_memories`' batch_size (the server's to choose over HTTP).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Sequence
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from memexdb_client.types import (
    Access,
    AccessEvent,
    ApiKey,
    AuditEvent,
    ConsolidationRun,
    CreatedKey,
    DreamUser,
    Embeddings,
    File,
    FileEntry,
    FileRevision,
    ImportResult,
    Memory,
    MemoryPage,
    MemoryRevision,
    MemoryType,
    RevokedKey,
    SearchHit,
    SearchMode,
    SmartRead,
)


class AsyncMemoryAPI(Protocol):
    """The memory, file and admin operations with their typed signatures."""

    async def store(
        self,
        agent_id: str,
        user_id: str,
        content: str,
        *,
        memory_type: MemoryType | str = ...,
        importance: float = ...,
        metadata: dict[str, Any] | None = ...,
        expires_at: datetime | None = ...,
        created_at: datetime | None = ...,
        id: UUID | None = ...,
        supersedes: Sequence[UUID] | None = ...,
        valid_from: datetime | None = ...,
        valid_to: datetime | None = ...,
    ) -> Memory: ...

    async def store_many(self, items: Sequence[Any]) -> list[Memory]: ...

    async def search(
        self,
        agent_id: str,
        user_id: str,
        query: str,
        *,
        top_k: int = ...,
        alpha: float | None = ...,
        half_life_days: float | None = ...,
        memory_types: Sequence[MemoryType | str] | None = ...,
        mode: SearchMode | str | None = ...,
        now: datetime | None = ...,
        context_weight: float | None = ...,
        metadata: dict[str, Any] | None = ...,
        include_archived: bool = ...,
        include_superseded: bool = ...,
        as_of: datetime | None = ...,
        valid_at: datetime | None = ...,
        created_after: datetime | None = ...,
        created_before: datetime | None = ...,
    ) -> list[SearchHit]: ...

    async def forget(self, agent_id: str, user_id: str, memory_id: UUID) -> Memory | None: ...

    async def count(
        self,
        agent_id: str,
        user_id: str,
        memory_type: MemoryType | str | None = ...,
        *,
        metadata: dict[str, Any] | None = ...,
    ) -> int: ...

    async def get(
        self, agent_id: str, user_id: str, memory_id: UUID, *, as_of: datetime | None = ...
    ) -> Memory: ...

    async def list_memories(
        self,
        agent_id: str,
        user_id: str,
        *,
        limit: int = ...,
        cursor: str | None = ...,
        memory_type: MemoryType | str | None = ...,
        created_after: datetime | None = ...,
        created_before: datetime | None = ...,
        metadata: dict[str, Any] | None = ...,
        include_archived: bool = ...,
    ) -> MemoryPage: ...

    async def update(
        self,
        agent_id: str,
        user_id: str,
        memory_id: UUID,
        *,
        content: str | None = ...,
        importance: float | None = ...,
        metadata: dict[str, Any] | None = ...,
        memory_type: MemoryType | str | None = ...,
        expires_at: datetime | None = ...,
        clear_expires_at: bool = ...,
        supersedes: Sequence[UUID] | None = ...,
        valid_from: datetime | None = ...,
        valid_to: datetime | None = ...,
        clear_valid_to: bool = ...,
    ) -> Memory: ...

    async def memory_history(
        self,
        agent_id: str,
        user_id: str,
        memory_id: UUID,
        *,
        limit: int = ...,
        before: int | None = ...,
    ) -> list[MemoryRevision]: ...

    async def memory_revision_diff(
        self, agent_id: str, user_id: str, memory_id: UUID, from_revision: int, to_revision: int
    ) -> dict[str, Any]: ...

    async def revert_memory(
        self, agent_id: str, user_id: str, memory_id: UUID, revision: int
    ) -> Memory: ...

    async def erase_user(self, agent_id: str, user_id: str, *, confirm: str) -> dict[str, int]: ...

    def export(
        self, agent_id: str, user_id: str | None = ..., *, embeddings: bool = ...
    ) -> AsyncIterator[dict[str, Any]]: ...

    async def import_memories(
        self, records: Iterable[dict[str, Any]] | AsyncIterable[dict[str, Any]]
    ) -> ImportResult: ...

    async def write_file(
        self,
        agent_id: str,
        user_id: str,
        path: str,
        content: str,
        *,
        base_revision: int | None = ...,
    ) -> File: ...

    async def read_file(
        self,
        agent_id: str,
        user_id: str,
        path: str,
        *,
        from_line: int | None = ...,
        to_line: int | None = ...,
        as_of: datetime | None = ...,
    ) -> File: ...

    async def list_files(
        self,
        agent_id: str,
        user_id: str,
        *,
        prefix: str | None = ...,
        limit: int = ...,
        after: str | None = ...,
    ) -> tuple[list[FileEntry], str | None]: ...

    async def patch_file(
        self,
        agent_id: str,
        user_id: str,
        path: str,
        *,
        heading: str | None = ...,
        append: str | None = ...,
        old_text: str | None = ...,
        new_text: str | None = ...,
        base_revision: int | None = ...,
    ) -> File: ...

    async def delete_file(
        self, agent_id: str, user_id: str, path: str, *, base_revision: int | None = ...
    ) -> File: ...

    async def list_revisions(
        self,
        agent_id: str,
        user_id: str,
        path: str,
        *,
        limit: int = ...,
        before: int | None = ...,
    ) -> list[FileRevision]: ...

    async def get_revision(
        self, agent_id: str, user_id: str, path: str, revision: int
    ) -> FileRevision: ...

    async def diff_revisions(
        self, agent_id: str, user_id: str, path: str, from_revision: int, to_revision: int
    ) -> str: ...

    async def restore_revision(
        self,
        agent_id: str,
        user_id: str,
        path: str,
        revision: int,
        *,
        base_revision: int | None = ...,
    ) -> File: ...

    async def smart_read(
        self, agent_id: str, user_id: str, query: str, *, budget: int = ...
    ) -> SmartRead: ...

    async def access_log(
        self,
        agent_id: str,
        user_id: str,
        *,
        since: datetime | None = ...,
        until: datetime | None = ...,
        limit: int = ...,
        before: int | None = ...,
    ) -> list[AccessEvent]: ...

    async def embed_texts(
        self, texts: str | Sequence[str], *, model: str | None = ...
    ) -> Embeddings: ...

    async def create_key(
        self,
        access: Access | str,
        *,
        agent_id: str | None = ...,
        user_ids: Sequence[str] | None = ...,
        name: str = ...,
        expires_at: datetime | None = ...,
    ) -> CreatedKey: ...

    async def list_keys(self, agent_id: str | None = ...) -> list[ApiKey]: ...

    async def revoke_key(self, key: str, confirm_last: bool = ...) -> RevokedKey: ...

    async def audit_events(
        self, limit: int = ..., before: int | None = ...
    ) -> list[AuditEvent]: ...

    async def consolidation_runs(
        self,
        agent_id: str | None = ...,
        user_id: str | None = ...,
        *,
        limit: int = ...,
        before: int | None = ...,
    ) -> list[ConsolidationRun]: ...

    async def dream_users(
        self,
        agent_id: str | None = ...,
        *,
        limit: int = ...,
        after: tuple[str, str] | None = ...,
    ) -> list[DreamUser]: ...

    async def set_dream_paused(self, agent_id: str, user_id: str, paused: bool) -> bool: ...

    async def restore_consolidation(self, run_id: int) -> ConsolidationRun: ...
