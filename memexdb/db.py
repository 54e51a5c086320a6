"""Connection pools whose connections speak pgvector and memexdb's enum."""

from __future__ import annotations

from time import monotonic
from typing import Any

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


# A connection handed out this recently is handed out again without the round trip of a
# check: under load that round trip was one more query per request. One idle for longer
# (the server may have restarted meanwhile) is checked first. The time is taken when the
# connection is handed out: a pool `reset` callback would move every return onto a
# worker task.
TRUSTED_FOR_S = 2.0


def _recently_used(conn: Any) -> bool:
    now = monotonic()
    last: float = getattr(conn, "_memex_used_at", float("-inf"))
    conn._memex_used_at = now
    return not conn.broken and now - last < TRUSTED_FOR_S


async def _check_async(conn: psycopg.AsyncConnection) -> None:
    if not _recently_used(conn):
        await AsyncConnectionPool.check_connection(conn)


def _check_sync(conn: psycopg.Connection) -> None:
    if not _recently_used(conn):
        ConnectionPool.check_connection(conn)


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
        # A restarted server must not leave broken connections behind: idle ones are
        # checked before they are handed out (see TRUSTED_FOR_S).
        check=_check_async,
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
        check=_check_sync,
    )
