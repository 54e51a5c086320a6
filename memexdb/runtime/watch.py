"""Watching the database from one process: requests learn at once that it is down, and
the pool is refreshed as soon as it is back.

Without this, every request during an outage waited out the pool's 5 s timeout, and after
the server came back the pool's reconnection backoff could add seconds more.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import psycopg

from memexdb.db import FailFastAsyncPool

log = logging.getLogger("memexdb")

UP_INTERVAL = 0.5  # a `select 1` on an open connection: negligible load
DOWN_INTERVAL = 0.2  # a refused unix-socket connect costs less still
PROBE_TIMEOUT = 2.0


class DatabaseWatch:
    """Probes the database on a connection of its own and keeps `pool.availability` up
    to date. A probe fails only when a fresh connection fails too: a connection that was
    merely dropped (the server restarted meanwhile, a backend was terminated) is not an
    outage."""

    def __init__(self, dsn: str, pool: FailFastAsyncPool) -> None:
        self.dsn = dsn
        self.pool = pool
        self._conn: psycopg.AsyncConnection | None = None

    async def run(self) -> None:
        """Forever (cancel to stop)."""
        availability = self.pool.availability
        try:
            while True:
                if await self._probe():
                    outage = availability.mark_up()
                    if outage is not None:
                        log.warning("the database answers again (down %.1f s)", outage)
                        await self._refresh_pool()
                elif availability.mark_down():
                    log.warning("the database is unreachable: answering 503 until it is back")
                interval = DOWN_INTERVAL if availability.down else UP_INTERVAL
                # A request that met a broken connection asks for a probe at once.
                # (asyncio.timeout: wait_for can lose a cancellation, see runtime.jobs)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(interval):
                        await availability.suspected.wait()
                availability.suspected.clear()
        finally:
            await self._close()

    async def _probe(self) -> bool:
        if self._conn is not None:
            try:
                async with asyncio.timeout(PROBE_TIMEOUT):
                    await self._conn.execute("select 1")
                return True
            except (psycopg.Error, TimeoutError):
                await self._close()
        try:
            async with asyncio.timeout(PROBE_TIMEOUT + 1):
                self._conn = await psycopg.AsyncConnection.connect(
                    self.dsn, autocommit=True, connect_timeout=int(PROBE_TIMEOUT)
                )
            async with asyncio.timeout(PROBE_TIMEOUT):
                await self._conn.execute("select 1")
            return True
        except (psycopg.Error, TimeoutError, OSError):
            await self._close()
            return False
        except Exception:
            # a watch that died would keep this process answering 503 for good
            log.exception("the database probe failed unexpectedly; counting it as down")
            await self._close()
            return False

    async def _refresh_pool(self) -> None:
        # Drop the connections the outage broke and open new ones now, rather than when
        # requests find them broken or the pool's backoff next retries.
        try:
            await self.pool.check()
        except Exception:
            log.debug("pool check after the outage failed", exc_info=True)

    async def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()
