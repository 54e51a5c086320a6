"""Connection pools: a connection handed out moments ago is reused without a check
round trip (one query fewer per request under load); an idle one is checked first, so a
connection the server dropped meanwhile is replaced instead of failing a request."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from memexdb import db
from memexdb.errors import DatabaseUnavailable


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Records each real check (a round trip) the pools make."""
    made: list[str] = []
    real_async = AsyncConnectionPool.check_connection

    async def counted_async(conn: Any) -> None:
        made.append("async")
        await real_async(conn)

    monkeypatch.setattr(AsyncConnectionPool, "check_connection", staticmethod(counted_async))
    yield made


def _terminate(dsn: str, pid: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as admin:
        # with a timeout it waits until the backend is gone
        admin.execute("select pg_terminate_backend(%s, 5000)", (pid,))


def _age(conn: Any) -> None:
    conn._memex_used_at -= db.TRUSTED_FOR_S + 1  # as if idle for a while


async def test_async_pool_checks_only_idle_connections(dsn: str, checks: list[str]) -> None:
    async with db.async_pool(dsn, min_size=1, max_size=1) as pool:
        async with pool.connection() as conn:  # new connection: checked
            first_pid = conn.info.backend_pid
        for _ in range(5):  # handed out moments ago: no check
            async with pool.connection() as conn:
                assert (await (await conn.execute("select 1")).fetchone()) == (1,)
        assert checks == ["async"]

        _age(conn)
        _terminate(dsn, first_pid)  # the server dropped it while it sat idle
        async with pool.connection() as conn:  # checked, found broken, replaced
            assert (await (await conn.execute("select 1")).fetchone()) == (1,)
            assert conn.info.backend_pid != first_pid
        assert checks[:2] == ["async", "async"]
        assert pool.availability.suspected.is_set()  # the watch (if any) probes at once


async def test_async_pool_fails_at_once_while_the_database_is_known_down(dsn: str) -> None:
    """While the watch says the database is down, requests get DatabaseUnavailable at
    once; a request already waiting for a connection gives up as soon as that is known;
    a request that merely waits for a busy pool still gets the connection released."""
    async with db.async_pool(dsn, min_size=1, max_size=1) as pool:
        pool.timeout = 5.0
        async with pool.connection():  # the only connection is busy ...
            waiting = asyncio.create_task(pool.getconn())
            await asyncio.sleep(db.FAST_WAIT_S + 0.2)  # ... past the fast path
            assert not waiting.done()
            declared = time.monotonic()
            assert pool.availability.mark_down()
            with pytest.raises(DatabaseUnavailable):
                await asyncio.wait_for(waiting, 2.0)
            assert time.monotonic() - declared < 0.2
            started = time.monotonic()
            with pytest.raises(DatabaseUnavailable):
                await pool.getconn()
            assert time.monotonic() - started < 0.05
            assert pool.availability.mark_up() is not None

            waiting = asyncio.create_task(pool.getconn())
            await asyncio.sleep(db.FAST_WAIT_S + 0.2)
            assert not waiting.done()
        conn = await asyncio.wait_for(waiting, 2.0)  # released: handed to the waiter
        await pool.putconn(conn)
        with pytest.raises(PoolTimeout):  # nothing down, pool busy: its own timeout
            async with pool.connection(), pool.connection(timeout=0.5):
                pass
        async with pool.connection() as conn:  # nothing leaked
            assert (await (await conn.execute("select 1")).fetchone()) == (1,)
