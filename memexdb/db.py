"""Connection pools whose connections speak pgvector and memexdb's enum."""

from __future__ import annotations

import asyncio
from time import monotonic
from typing import Any

import psycopg
from pgvector.psycopg import register_vector_async
from psycopg.types.enum import EnumInfo, register_enum
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from memexdb.errors import DatabaseUnavailable
from memexdb.types import MemoryType

# The service acts as memex_app, never as the login role: a superuser or the tables' owner
# would see past row-level security. A login role that cannot (a SQL role bound to one
# tenant) stays itself. Databases not yet migrated have no memex_app.
_ACT_AS_APP = """
select set_config('role', 'memex_app', false)
where case when exists (select from pg_roles where rolname = 'memex_app')
           then pg_has_role('memex_app', 'member') else false end
"""


async def _configure_async(conn: psycopg.AsyncConnection) -> None:
    await register_vector_async(conn)
    info = await EnumInfo.fetch(conn, "memex.memory_type")
    if info is not None:
        register_enum(info, conn, MemoryType, mapping={m: m.value for m in MemoryType})
    await conn.set_autocommit(True)
    await conn.execute(_ACT_AS_APP)


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


class Availability:
    """What this process knows of its database: down from a failed probe until one
    succeeds (memexdb.runtime.watch probes it). Requests that arrive meanwhile fail at
    once rather than each waiting out the pool's timeout for a server that is gone. A
    broken connection makes the database `suspected`: the watch probes it at once."""

    def __init__(self) -> None:
        self.down_since: float | None = None
        self.suspected = asyncio.Event()
        self.outage = asyncio.Event()  # set while down

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def mark_down(self) -> bool:
        """Record an outage; True if it was up until now."""
        if self.down_since is not None:
            return False
        self.down_since = monotonic()
        self.outage.set()
        return True

    def mark_up(self) -> float | None:
        """Record that it answers again; how long it was down (None: it was up)."""
        since, self.down_since = self.down_since, None
        self.outage.clear()
        return None if since is None else monotonic() - since


# Most requests get a connection at once. One that waited this long finds the pool
# exhausted or the server gone: it waits on for a connection or for the watch to declare
# an outage, whichever comes first, so that requests already waiting when the server
# went away answer 503 as soon as that is known, not after the pool's whole timeout.
FAST_WAIT_S = 0.25


class FailFastAsyncPool(AsyncConnectionPool):
    """A pool that refuses at once (DatabaseUnavailable) while `availability` says the
    database is down."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.availability = Availability()
        super().__init__(*args, check=self._check_or_suspect, **kwargs)

    async def _check_or_suspect(self, conn: psycopg.AsyncConnection[Any]) -> None:
        try:
            await _check_async(conn)
        except Exception:
            self.availability.suspected.set()
            raise

    # `timeout`: the signature of the method it overrides
    async def getconn(
        self,
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> psycopg.AsyncConnection[Any]:
        if self.availability.down:
            raise DatabaseUnavailable("database is unavailable")
        deadline = monotonic() + (self.timeout if timeout is None else timeout)
        try:
            return await super().getconn(min(FAST_WAIT_S, deadline - monotonic()))
        except PoolTimeout:
            if monotonic() >= deadline - 0.001:
                raise
        return await self._getconn_unless_outage(deadline - monotonic())

    async def _getconn_unless_outage(self, wait_s: float) -> psycopg.AsyncConnection[Any]:
        if self.availability.down:
            raise DatabaseUnavailable("database is unavailable")
        getting = asyncio.ensure_future(super().getconn(wait_s))
        outage = asyncio.ensure_future(self.availability.outage.wait())
        gave_up = False
        try:
            await asyncio.wait((getting, outage), return_when=asyncio.FIRST_COMPLETED)
        finally:  # also when this request is cancelled
            outage.cancel()
            if not getting.done():
                gave_up = True
                getting.cancel()
                await asyncio.wait((getting,))
                if not getting.cancelled() and getting.exception() is None:
                    await self.putconn(getting.result())  # handed over as we gave up
        if gave_up:
            raise DatabaseUnavailable("database is unavailable")
        return getting.result()

    async def putconn(self, conn: psycopg.AsyncConnection[Any]) -> None:
        if conn.broken:
            self.availability.suspected.set()
        await super().putconn(conn)


def async_pool(dsn: str, *, min_size: int = 1, max_size: int = 10) -> FailFastAsyncPool:
    """An unopened async pool (open it with ``await pool.open(wait=True)``)."""
    return FailFastAsyncPool(
        dsn,
        min_size=min_size,
        max_size=max_size,
        open=False,
        configure=_configure_async,
        timeout=5.0,
        # Give up replacing lost connections soon (a retry after ~1 s, then no more): while
        # the database is down the watch keeps requests off the pool, and once it is back
        # the next request opens a connection at once instead of waiting out a backoff.
        reconnect_timeout=2.0,
        # A restarted server must not leave broken connections behind: idle ones are
        # checked before they are handed out (see TRUSTED_FOR_S and _check_or_suspect).
    )
