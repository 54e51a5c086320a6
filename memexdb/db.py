"""Connection pools whose connections speak pgvector and memexdb's enum."""

from __future__ import annotations

import psycopg
from pgvector.psycopg import register_vector, register_vector_async
from psycopg.types.enum import EnumInfo, register_enum
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from memexdb.types import MemoryType


async def _configure_async(conn: psycopg.AsyncConnection) -> None:
    await register_vector_async(conn)
    info = await EnumInfo.fetch(conn, "memex.memory_type")
    if info is not None:
        register_enum(info, conn, MemoryType, mapping={m: m.value for m in MemoryType})
    await conn.set_autocommit(True)


def _configure_sync(conn: psycopg.Connection) -> None:
    register_vector(conn)
    info = EnumInfo.fetch(conn, "memex.memory_type")
    if info is not None:
        register_enum(info, conn, MemoryType, mapping={m: m.value for m in MemoryType})
    conn.autocommit = True


def async_pool(dsn: str, *, min_size: int = 1, max_size: int = 10) -> AsyncConnectionPool:
    """An unopened async pool (open it with ``await pool.open(wait=True)``)."""
    return AsyncConnectionPool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        open=False,
        configure=_configure_async,
        timeout=5.0,
        # Retry a lost server every few seconds instead of backing off to minutes.
        reconnect_timeout=5.0,
        # Checked when a connection comes back from the pool after an error, so a
        # restarted server does not leave broken connections behind.
        check=AsyncConnectionPool.check_connection,
    )


def sync_pool(dsn: str, *, min_size: int = 1, max_size: int = 4) -> ConnectionPool:
    """An unopened sync pool (open it with ``pool.open(wait=True)``)."""
    return ConnectionPool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        open=False,
        configure=_configure_sync,
        timeout=5.0,
        # Retry a lost server every few seconds instead of backing off to minutes.
        reconnect_timeout=5.0,
        check=ConnectionPool.check_connection,
    )
