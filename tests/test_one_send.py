"""A request's pipeline goes out in one send (memexdb.pipeline): nothing reaches the server
before its Sync, then everything does, statements larger than libpq's buffer included."""

from __future__ import annotations

import asyncio
import time
import uuid

import psycopg

from memexdb import AsyncMemex
from memexdb.pipeline import holding


def _seen(dsn: str, pid: int, marker: str) -> bool:
    """Whether backend `pid` has received the statement naming `marker` (within 0.5 s)."""
    deadline = time.monotonic() + 0.5
    with psycopg.connect(dsn, autocommit=True) as watcher:
        while time.monotonic() < deadline:
            row = watcher.execute(
                "select query from pg_stat_activity where pid = %s", (pid,)
            ).fetchone()
            if row is not None and marker in row[0]:
                return True
            time.sleep(0.02)
    return False


async def test_nothing_goes_out_before_the_sync(dsn: str) -> None:
    """psycopg's own pipeline sends each statement as it is executed: the server runs it
    before the pipeline ends. A held one sends the statements together at its Sync."""
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        pid = conn.info.backend_pid
        first, second = f"held-{uuid.uuid4().hex}", f"held-{uuid.uuid4().hex}"
        holding(conn)
        async with conn.pipeline():
            one = await conn.execute(f"select '{first}'")
            two = await conn.execute(f"select '{second}', %s::int", (2,))
            # (pg_stat_activity shows the last statement the backend received)
            assert not await asyncio.to_thread(_seen, dsn, pid, second)
        assert await one.fetchall() == [(first,)]
        assert await two.fetchall() == [(second, 2)]
        assert await asyncio.to_thread(_seen, dsn, pid, second)
        # the connection is left as psycopg's pipeline leaves it: idle, no pipeline
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert (await (await conn.execute("select 3")).fetchone()) == (3,)


async def test_a_statement_larger_than_the_buffer_goes_out_whole(
    one_connection: AsyncMemex,
) -> None:
    """A statement beyond libpq's 64 KiB buffer (a batch of stores) is written out before
    any result is awaited: the server answers nothing before it has read all of it."""
    text = "x" * 300_000
    for _ in range(3):  # and again on the same connection, prepared after a few runs
        rows = await asyncio.wait_for(
            one_connection.fetch(None, "select length(%(text)s::text)", {"text": text}), 30
        )
        assert rows == [300_000]
