"""The typed Python API over the SQL API: one embedding call, one SQL statement.

`AsyncMemex` serves the REST and MCP frontends and asyncio applications; `Memex` is the
same API for synchronous code. Neither ranks, filters or limits anything itself: that is
memex.* in SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

import numpy as np
import psycopg
from psycopg.rows import class_row, scalar_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from memexdb import queries
from memexdb.db import async_pool, sync_pool
from memexdb.embedding import BatchingEmbedder, Embedder, build_embedder
from memexdb.errors import InvalidArgument, SetupError, translate
from memexdb.types import (
    MaintenanceResult,
    Memory,
    MemoryType,
    NewMemory,
    SearchHit,
    SearchMode,
    SearchOptions,
)


def _require_text(field: str, value: str) -> None:
    # The embedder needs real text; SQL checks everything else after embedding.
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument(field, "must be a non-empty string")


def _memory_type(value: MemoryType | str, field: str = "memory_type") -> MemoryType:
    try:
        return MemoryType(value)
    except ValueError:
        raise InvalidArgument(field, "must be one of episodic, semantic, procedural") from None


def _store_params(item: NewMemory, embedding: np.ndarray, model: str) -> dict[str, Any]:
    return {
        "agent_id": item.agent_id,
        "user_id": item.user_id,
        "content": item.content,
        "embedding": embedding,
        "embedding_model": model,
        "memory_type": str(item.memory_type),
        "importance": item.importance,
        "metadata": Jsonb(item.metadata if item.metadata is not None else {}),
        "expires_at": item.expires_at,
        "created_at": item.created_at,
    }


def _store_many_params(
    items: Sequence[NewMemory], embeddings: np.ndarray, model: str
) -> dict[str, Any]:
    return {
        "agent_ids": [i.agent_id for i in items],
        "user_ids": [i.user_id for i in items],
        "contents": [i.content for i in items],
        "embeddings": list(embeddings),
        "embedding_model": model,
        "memory_types": [
            str(_memory_type(i.memory_type, f"memories[{n}].memory_type"))
            for n, i in enumerate(items)
        ],
        "importances": [i.importance for i in items],
        "metadata": [Jsonb(i.metadata if i.metadata is not None else {}) for i in items],
        "expires_at": [i.expires_at for i in items],
        "created_at": [i.created_at for i in items],
    }


def _search_params(
    agent_id: str,
    user_id: str,
    query: str,
    embedding: np.ndarray | None,
    model: str,
    options: SearchOptions,
) -> dict[str, Any]:
    return {
        "agent_id": agent_id,
        "user_id": user_id,
        "query_embedding": embedding,
        "query_text": query,
        "embedding_model": model,
        "top_k": options.top_k,
        "alpha": options.alpha,
        "half_life_days": options.half_life_days,
        "memory_types": [str(_memory_type(t, "memory_types")) for t in options.memory_types]
        if options.memory_types
        else None,
        "mode": str(options.mode),
        "now": options.now,
        "context_weight": options.context_weight,
    }


def _tenant(agent_id: str, user_id: str, **extra: Any) -> dict[str, Any]:
    return {"agent_id": agent_id, "user_id": user_id, **extra}


def _check_dims(dims: int | None, embedder: Embedder) -> None:
    if dims is None:
        raise SetupError("the database is not migrated: run `memexdb migrate`")
    if dims != embedder.dim:
        raise SetupError(
            f"embedder {embedder.model_id} makes {embedder.dim}-d vectors but "
            f"memex.memories.embedding is vector({dims})"
        )


class AsyncMemex:
    """Async client: `await AsyncMemex.connect(dsn)`, then store/search/forget/count."""

    def __init__(
        self, pool: AsyncConnectionPool, embedder: BatchingEmbedder, *, owns_embedder: bool = False
    ) -> None:
        self.pool = pool
        self.embedder = embedder
        self.model_id = embedder.model_id
        self._owns_embedder = owns_embedder

    @classmethod
    async def connect(
        cls,
        dsn: str,
        *,
        embedder: Embedder | BatchingEmbedder | None = None,
        min_size: int = 1,
        max_size: int = 10,
    ) -> AsyncMemex:
        """Open a pool on a migrated database and check the embedder fits its schema."""
        if embedder is None:
            embedder = build_embedder("minilm")
        owns = not isinstance(embedder, BatchingEmbedder)
        batching = (
            embedder if isinstance(embedder, BatchingEmbedder) else BatchingEmbedder(embedder)
        )
        pool = async_pool(dsn, min_size=min_size, max_size=max_size)
        try:
            await pool.open(wait=True, timeout=30)
            async with pool.connection() as conn:
                cur = conn.cursor(row_factory=scalar_row)
                try:
                    dims = await (await cur.execute(queries.EMBEDDING_DIMS)).fetchone()
                except psycopg.errors.UndefinedFunction:
                    dims = None
            _check_dims(dims, batching.embedder)
        except BaseException as exc:
            await pool.close()
            raise translate(exc) from exc
        return cls(pool, batching, owns_embedder=owns)

    async def aclose(self) -> None:
        await self.pool.close()
        if self._owns_embedder:
            await self.embedder.aclose()

    async def __aenter__(self) -> AsyncMemex:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _one(self, row_type: type[Any], sql: str, params: dict[str, Any]) -> Any:
        try:
            async with self.pool.connection() as conn:
                cur = conn.cursor(row_factory=class_row(row_type))
                return await (await cur.execute(sql, params)).fetchone()
        except Exception as exc:
            raise translate(exc) from exc

    async def _all(self, row_type: type[Any], sql: str, params: dict[str, Any]) -> list[Any]:
        try:
            async with self.pool.connection() as conn:
                cur = conn.cursor(row_factory=class_row(row_type))
                return await (await cur.execute(sql, params)).fetchall()
        except Exception as exc:
            raise translate(exc) from exc

    async def _scalar(self, sql: str, params: dict[str, Any] | None = None) -> Any:
        try:
            async with self.pool.connection() as conn:
                cur = conn.cursor(row_factory=scalar_row)
                return await (await cur.execute(sql, params)).fetchone()
        except Exception as exc:
            raise translate(exc) from exc

    async def store(
        self,
        agent_id: str,
        user_id: str,
        content: str,
        *,
        memory_type: MemoryType | str = MemoryType.EPISODIC,
        importance: float = 1.0,
        metadata: dict[str, Any] | None = None,
        expires_at: datetime | None = None,
        created_at: datetime | None = None,
    ) -> Memory:
        """Embed `content` and store it as a memory of tenant (agent_id, user_id)."""
        _require_text("content", content)
        embedding = await self.embedder.embed_one(content)
        item = NewMemory(
            agent_id,
            user_id,
            content,
            _memory_type(memory_type),
            importance,
            metadata,
            expires_at,
            created_at,
        )
        params = _store_params(item, embedding, self.model_id)
        result: Memory = await self._one(Memory, queries.STORE, params)
        return result

    async def store_many(self, items: Sequence[NewMemory]) -> list[Memory]:
        """Embed and store many memories in one statement; returned in input order."""
        for index, item in enumerate(items):
            _require_text(f"memories[{index}].content", item.content)
        if not items:
            raise InvalidArgument("memories", "must hold at least one memory")
        embeddings = await self.embedder.embed_many([i.content for i in items])
        params = _store_many_params(items, embeddings, self.model_id)
        return await self._all(Memory, queries.STORE_MANY, params)

    async def search(
        self,
        agent_id: str,
        user_id: str,
        query: str,
        *,
        top_k: int = 10,
        alpha: float = 0.7,
        half_life_days: float = 30.0,
        memory_types: Sequence[MemoryType | str] | None = None,
        mode: SearchMode | str = SearchMode.VECTOR,
        now: datetime | None = None,
        context_weight: float | None = None,
    ) -> list[SearchHit]:
        """Rank the tenant's memories for `query`; see memex.search for the formula."""
        _require_text("query", query)
        embedding = None if mode == SearchMode.TEXT else await self.embedder.embed_one(query)
        options = SearchOptions(
            top_k, alpha, half_life_days, memory_types, mode, now, context_weight
        )
        params = _search_params(agent_id, user_id, query, embedding, self.model_id, options)
        return await self._all(SearchHit, queries.SEARCH, params)

    async def forget(self, agent_id: str, user_id: str, memory_id: UUID) -> Memory:
        """Delete one memory of the tenant; raises NotFound if it is not theirs."""
        result: Memory = await self._one(
            Memory, queries.FORGET, _tenant(agent_id, user_id, id=memory_id)
        )
        return result

    async def count(
        self, agent_id: str, user_id: str, memory_type: MemoryType | str | None = None
    ) -> int:
        """Number of live memories of the tenant (optionally of one type)."""
        kind = str(_memory_type(memory_type)) if memory_type is not None else None
        return int(await self._scalar(queries.COUNT, _tenant(agent_id, user_id, memory_type=kind)))

    async def ping(self) -> None:
        """Raise DatabaseUnavailable unless the database answers."""
        await self._scalar(queries.PING)

    async def maintenance(self) -> MaintenanceResult:
        """Run memex.maintenance(): delete expired memories and stale rate-limit rows, and
        move tenants grown past exact_scan_max_rows into the ANN index."""
        result: MaintenanceResult = await self._one(MaintenanceResult, queries.MAINTENANCE, {})
        return result

    async def set_setting(self, name: str, value: Any) -> None:
        """Write an operator setting (memex.settings), e.g. rate_limit_store_per_minute."""
        try:
            async with self.pool.connection() as conn:
                await conn.execute(queries.SET_SETTING, {"name": name, "value": Jsonb(value)})
        except Exception as exc:
            raise translate(exc) from exc


class Memex:
    """Synchronous client with the same methods as AsyncMemex."""

    def __init__(self, pool: ConnectionPool, embedder: Embedder) -> None:
        self.pool = pool
        self.embedder = embedder
        self.model_id = embedder.model_id

    @classmethod
    def connect(cls, dsn: str, *, embedder: Embedder | None = None, max_size: int = 4) -> Memex:
        """Open a pool on a migrated database and check the embedder fits its schema."""
        embedder = embedder or build_embedder("minilm")
        pool = sync_pool(dsn, max_size=max_size)
        try:
            pool.open(wait=True, timeout=30)
            with pool.connection() as conn:
                try:
                    dims = conn.execute(queries.EMBEDDING_DIMS).fetchone()
                except psycopg.errors.UndefinedFunction:
                    dims = None
            _check_dims(dims[0] if dims else None, embedder)
        except BaseException as exc:
            pool.close()
            raise translate(exc) from exc
        return cls(pool, embedder)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> Memex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(
        self, row_type: type[Any] | None, sql: str, params: dict[str, Any] | None
    ) -> list[Any]:
        try:
            with self.pool.connection() as conn:
                factory = class_row(row_type) if row_type else scalar_row
                return conn.cursor(row_factory=factory).execute(sql, params).fetchall()
        except Exception as exc:
            raise translate(exc) from exc

    def store(
        self,
        agent_id: str,
        user_id: str,
        content: str,
        *,
        memory_type: MemoryType | str = MemoryType.EPISODIC,
        importance: float = 1.0,
        metadata: dict[str, Any] | None = None,
        expires_at: datetime | None = None,
        created_at: datetime | None = None,
    ) -> Memory:
        """Embed `content` and store it as a memory of tenant (agent_id, user_id)."""
        _require_text("content", content)
        embedding = self.embedder.embed([content])[0]
        item = NewMemory(
            agent_id,
            user_id,
            content,
            _memory_type(memory_type),
            importance,
            metadata,
            expires_at,
            created_at,
        )
        params = _store_params(item, embedding, self.model_id)
        result: Memory = self._run(Memory, queries.STORE, params)[0]
        return result

    def store_many(self, items: Sequence[NewMemory]) -> list[Memory]:
        """Embed and store many memories in one statement; returned in input order."""
        for index, item in enumerate(items):
            _require_text(f"memories[{index}].content", item.content)
        if not items:
            raise InvalidArgument("memories", "must hold at least one memory")
        embeddings = self.embedder.embed([i.content for i in items])
        return self._run(
            Memory, queries.STORE_MANY, _store_many_params(items, embeddings, self.model_id)
        )

    def search(
        self,
        agent_id: str,
        user_id: str,
        query: str,
        *,
        top_k: int = 10,
        alpha: float = 0.7,
        half_life_days: float = 30.0,
        memory_types: Sequence[MemoryType | str] | None = None,
        mode: SearchMode | str = SearchMode.VECTOR,
        now: datetime | None = None,
        context_weight: float | None = None,
    ) -> list[SearchHit]:
        """Rank the tenant's memories for `query`; see memex.search for the formula."""
        _require_text("query", query)
        embedding = None if mode == SearchMode.TEXT else self.embedder.embed([query])[0]
        options = SearchOptions(
            top_k, alpha, half_life_days, memory_types, mode, now, context_weight
        )
        params = _search_params(agent_id, user_id, query, embedding, self.model_id, options)
        return self._run(SearchHit, queries.SEARCH, params)

    def forget(self, agent_id: str, user_id: str, memory_id: UUID) -> Memory:
        """Delete one memory of the tenant; raises NotFound if it is not theirs."""
        result: Memory = self._run(
            Memory, queries.FORGET, _tenant(agent_id, user_id, id=memory_id)
        )[0]
        return result

    def count(
        self, agent_id: str, user_id: str, memory_type: MemoryType | str | None = None
    ) -> int:
        """Number of live memories of the tenant (optionally of one type)."""
        kind = str(_memory_type(memory_type)) if memory_type is not None else None
        return int(self._run(None, queries.COUNT, _tenant(agent_id, user_id, memory_type=kind))[0])
