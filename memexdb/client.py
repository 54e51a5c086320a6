"""The typed Python API over the SQL API: one embedding call, one SQL statement.

`AsyncMemex` serves the REST and MCP frontends and asyncio applications; `Memex` is the
same API for synchronous code (each method runs AsyncMemex's on a private event loop, so
there is one body per operation). Arguments are checked against memexdb.params (the
bounds the frontends publish) before anything is embedded; neither class ranks, filters
or limits anything itself: that is memex.* in SQL.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Coroutine, Sequence
from datetime import datetime
from typing import Any, Concatenate, ParamSpec, TypeVar
from uuid import UUID

import numpy as np
import psycopg
from psycopg.rows import class_row, scalar_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from memexdb import params, queries
from memexdb.db import async_pool
from memexdb.embedding import BatchingEmbedder, Embedder, build_embedder
from memexdb.errors import InvalidArgument, SetupError, translate
from memexdb.params import MemoryCreate, MemorySearchRequest, validated
from memexdb.types import MaintenanceResult, Memory, MemoryType, SearchHit, SearchMode


def _store_params(items: Sequence[MemoryCreate], embeddings: np.ndarray, model: str) -> Any:
    return {
        "agent_ids": [i.agent_id for i in items],
        "user_ids": [i.user_id for i in items],
        "contents": [i.content for i in items],
        "embeddings": list(embeddings),
        "embedding_model": model,
        "memory_types": [str(i.memory_type) for i in items],
        "importances": [i.importance for i in items],
        "metadata": [Jsonb(i.metadata if i.metadata is not None else {}) for i in items],
        "expires_at": [i.expires_at for i in items],
        "created_at": [i.created_at for i in items],
    }


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
            if owns:
                await batching.aclose()
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

    async def _fetch(
        self, row_type: type[Any] | None, sql: str, values: dict[str, Any] | None = None
    ) -> list[Any]:
        try:
            async with self.pool.connection() as conn:
                factory = class_row(row_type) if row_type else scalar_row
                cur = conn.cursor(row_factory=factory)
                return await (await cur.execute(sql, values)).fetchall()
        except Exception as exc:
            raise translate(exc) from exc

    async def store(
        self,
        agent_id: str,
        user_id: str,
        content: str,
        *,
        memory_type: MemoryType | str = params.DEFAULT_MEMORY_TYPE,
        importance: float = params.DEFAULT_IMPORTANCE,
        metadata: dict[str, Any] | None = None,
        expires_at: datetime | None = None,
        created_at: datetime | None = None,
    ) -> Memory:
        """Embed `content` and store it as a memory of tenant (agent_id, user_id)."""
        item = validated(
            MemoryCreate,
            agent_id=agent_id,
            user_id=user_id,
            content=content,
            memory_type=memory_type,
            importance=importance,
            metadata=metadata,
            expires_at=expires_at,
            created_at=created_at,
        )
        embedding = await self.embedder.embed_one(item.content)
        values = {
            **item.model_dump(exclude={"memory_type", "metadata"}),
            "memory_type": str(item.memory_type),
            "metadata": Jsonb(item.metadata if item.metadata is not None else {}),
            "embedding": embedding,
            "embedding_model": self.model_id,
        }
        rows: list[Memory] = await self._fetch(Memory, queries.STORE, values)
        return rows[0]

    async def store_many(self, items: Sequence[MemoryCreate]) -> list[Memory]:
        """Embed and store many memories (`NewMemory` items) in one statement, all or
        nothing; returned in input order."""
        if not items:
            raise InvalidArgument("memories", "must hold at least one memory")
        batch = list(items)  # NewMemory items checked themselves when they were built
        embeddings = await self.embedder.embed_many([i.content for i in batch])
        return await self._fetch(
            Memory, queries.STORE_MANY, _store_params(batch, embeddings, self.model_id)
        )

    async def search(
        self,
        agent_id: str,
        user_id: str,
        query: str,
        *,
        top_k: int = params.DEFAULT_TOP_K,
        alpha: float | None = params.DEFAULT_ALPHA,
        half_life_days: float | None = params.DEFAULT_HALF_LIFE_DAYS,
        memory_types: Sequence[MemoryType | str] | None = None,
        mode: SearchMode | str | None = params.DEFAULT_MODE,
        now: datetime | None = None,
        context_weight: float | None = None,
    ) -> list[SearchHit]:
        """Rank the tenant's memories for `query`; see memex.search for the formula."""
        request = validated(
            MemorySearchRequest,
            agent_id=agent_id,
            user_id=user_id,
            query=query,
            top_k=top_k,
            alpha=alpha,
            half_life_days=half_life_days,
            memory_types=list(memory_types) if memory_types is not None else None,
            mode=mode,
            context_weight=context_weight,
        )
        embedding = (
            None
            if request.mode == SearchMode.TEXT
            else await self.embedder.embed_one(request.query)
        )
        types = request.types()
        return await self._fetch(
            SearchHit,
            queries.SEARCH,
            {
                **request.model_dump(include={"agent_id", "user_id", "top_k", "alpha"}),
                "half_life_days": request.half_life_days,
                "query_embedding": embedding,
                "query_text": request.query,
                "embedding_model": self.model_id,
                "memory_types": [str(t) for t in types] if types else None,
                "mode": None if request.mode is None else str(request.mode),
                "now": now,
                "context_weight": request.context_weight,
            },
        )

    async def forget(self, agent_id: str, user_id: str, memory_id: UUID) -> Memory:
        """Delete one memory of the tenant; raises NotFound if it is not theirs."""
        tenant = validated(params.TenantQuery, agent_id=agent_id, user_id=user_id)
        rows: list[Memory] = await self._fetch(
            Memory, queries.FORGET, {**tenant.model_dump(), "id": memory_id}
        )
        return rows[0]

    async def count(
        self, agent_id: str, user_id: str, memory_type: MemoryType | str | None = None
    ) -> int:
        """Number of live memories of the tenant (optionally of one type) that a search
        with this client's embedding model can find."""
        query = validated(
            params.CountQuery, agent_id=agent_id, user_id=user_id, memory_type=memory_type
        )
        values = {
            **query.model_dump(include={"agent_id", "user_id"}),
            "memory_type": str(query.memory_type) if query.memory_type else None,
            "embedding_model": self.model_id,
        }
        return int((await self._fetch(None, queries.COUNT, values))[0])

    async def ping(self) -> None:
        """Raise DatabaseUnavailable unless the database answers."""
        await self._fetch(None, queries.PING)

    async def maintenance(self) -> MaintenanceResult:
        """Run memex.maintenance(): delete expired memories and stale rate-limit rows, and
        move tenants grown past exact_scan_max_rows into the ANN index."""
        rows: list[MaintenanceResult] = await self._fetch(MaintenanceResult, queries.MAINTENANCE)
        return rows[0]

    async def set_setting(self, name: str, value: Any) -> None:
        """Write an operator setting (memex.settings), e.g. rate_limit_store_per_minute."""
        await self._fetch(None, queries.SET_SETTING, {"name": name, "value": Jsonb(value)})


_P = ParamSpec("_P")
_R = TypeVar("_R")


class _LoopThread:
    """An event loop on its own daemon thread, for running coroutines from sync code."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="memexdb-sync", daemon=True
        )
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, _R]) -> _R:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


def _blocking(
    method: Callable[Concatenate[AsyncMemex, _P], Coroutine[Any, Any, _R]],
) -> Callable[Concatenate[Memex, _P], _R]:
    """The sync form of an AsyncMemex method: same signature and docstring."""

    def call(self: Memex, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return self._loop.run(method(self._async, *args, **kwargs))

    functools.update_wrapper(call, method)
    return call


class Memex:
    """Synchronous client with the same methods as AsyncMemex (`Memex.connect(dsn)`)."""

    def __init__(self, client: AsyncMemex, loop: _LoopThread) -> None:
        self._async = client
        self._loop = loop
        self.model_id = client.model_id

    @classmethod
    def connect(
        cls, dsn: str, *, embedder: Embedder | BatchingEmbedder | None = None, max_size: int = 4
    ) -> Memex:
        """Open a pool on a migrated database and check the embedder fits its schema."""
        loop = _LoopThread()
        try:
            client = loop.run(AsyncMemex.connect(dsn, embedder=embedder, max_size=max_size))
        except BaseException:
            loop.stop()
            raise
        return cls(client, loop)

    def close(self) -> None:
        try:
            self._loop.run(self._async.aclose())
        finally:
            self._loop.stop()

    def __enter__(self) -> Memex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    store = _blocking(AsyncMemex.store)
    store_many = _blocking(AsyncMemex.store_many)
    search = _blocking(AsyncMemex.search)
    forget = _blocking(AsyncMemex.forget)
    count = _blocking(AsyncMemex.count)
    ping = _blocking(AsyncMemex.ping)
    maintenance = _blocking(AsyncMemex.maintenance)
    set_setting = _blocking(AsyncMemex.set_setting)
