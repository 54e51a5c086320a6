"""Read replicas (MEMEX_READ_DATABASE_URLS): which database answers a read.

A `ReplicaRouter` holds one connection pool per streaming replica (hot standby) and a
monitor task that, every POLL_S, reads the primary's WAL position and then each replica's
replay position. From those it knows, for each replica, the latest moment `covered_at`
such that everything committed on the primary before it has been replayed there.

A read operation (Operation.replica: search, get, list, count) goes to a replica when:

- the replica answered the monitor's last probe (a replica that is down is skipped);
- its `covered_at` is at most `max_lag_s` old (a replica lagging past the bound is
  skipped);
- its `covered_at` is after the caller's last write through this service (read-your-
  writes: the write had committed before the monitor read the primary's position, and
  the replica has replayed past that position). The last writes are kept in a
  WriteTable, which `memexdb serve --workers N` shares between its workers;
- it has replayed past the request's Memex-Min-LSN (REQUIRED_LSN), the session token of
  a write the caller made through any process or host (the Memex-Write-LSN its answer
  carried);
- the caller has used the primary within KEY_REFRESH_S (an API key's `last_used_at` is
  recorded by memex._enter on the primary only, at most once a minute);
- the operation is not rate limited (a limited search counts the hit: it writes).

Otherwise, and whenever the replica fails the call (connection lost, or SQLSTATE 25006
from a call that turned out to write), the call runs on the primary: a replica never
fails a request. The caller is the API key (or operator) the call acts as (see
docs/scaling.md, "Read replicas").
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import logging
import mmap
import os
import re
import struct
import tempfile
from collections import deque
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from time import monotonic
from typing import Any

import psycopg
from psycopg_pool import PoolTimeout

from memexdb.db import FailFastAsyncPool, async_pool
from memexdb.errors import DatabaseUnavailable

log = logging.getLogger(__name__)

# How often the monitor reads the WAL positions: a caller's reads go to the primary for
# about this long after its write (then to a replica that has replayed it).
POLL_S = 0.1
# A caller that has not been on the primary for this long has its next read there, so
# that memex._enter records its key's last_used_at (at most once a minute) as before.
KEY_REFRESH_S = 30.0
# How long a replica may take to answer the monitor or to hand out a connection.
PROBE_TIMEOUT_S = 1.0
CONNECT_TIMEOUT_S = 0.5
# How often a replica that is down is tried again.
DOWN_PROBE_S = 1.0
# Primary positions remembered (POLL_S apart): a replica lagging past them is behind
# anything we could route to it anyway.
_HISTORY = 256

# A call on a replica that fails so goes to the primary: the replica is unreachable
# (REPLICA_DOWN), the call writes after all (25006: e.g. a rate limit set within the
# last LIMITS_TRUSTED_FOR_S), or replay cancelled it (40001, a recovery conflict).
REPLICA_DOWN: tuple[type[BaseException], ...] = (
    psycopg.OperationalError,
    psycopg.InterfaceError,
    PoolTimeout,
    DatabaseUnavailable,
    TimeoutError,
)
REPLICA_FAILURES: tuple[type[BaseException], ...] = (
    *REPLICA_DOWN,
    psycopg.errors.ReadOnlySqlTransaction,
    psycopg.errors.SerializationFailure,
)

# The write position: past every commit acknowledged under synchronous_commit on (the
# default; memexdb sets no other). Not the insert position: after a record that ends on
# a page boundary it points past the next page's header, which an idle replica never
# reaches, so its coverage would stall.
PRIMARY_LSN = "select pg_current_wal_lsn()::text"
REPLAY_LSN = "select pg_is_in_recovery(), pg_last_wal_replay_lsn()::text"


# The Memex-Min-LSN a request carries (a pg_lsn, as a number): its replica reads go only
# to a replica that has replayed past it (0: any). Set for the request by the REST
# handler (memexdb.rest.operation_routes).
REQUIRED_LSN: ContextVar[int] = ContextVar("memexdb_required_lsn", default=0)
# A session token: a WAL position (a pg_lsn) as one hexadecimal number of at most 64 bits,
# pg_lsn 16/B374D848 as 16B374D848 (no "/": a header value of letters and digits only)
LSN_PATTERN = r"^[0-9A-Fa-f]{1,16}$"
_LSN = re.compile(LSN_PATTERN)


def lsn(text: str) -> int:
    """A pg_lsn's text (16/B374D848) as a number."""
    high, low = text.split("/")
    return (int(high, 16) << 32) | int(low, 16)


def parse_lsn(text: str) -> int | None:
    """A session token (LSN_PATTERN) as a number; None when it is not one."""
    return int(text, 16) if _LSN.fullmatch(text) else None


def token(position: int) -> str:
    """A WAL position as a session token (LSN_PATTERN)."""
    return f"{position:X}"


# The writes table: this many slots of 8 bytes (128 KiB), one float64 each
WRITE_SLOTS = 16384
_SLOT = struct.Struct("=d")
WRITES_TABLE_ENV = "MEMEX_WRITES_TABLE"


class WriteTable:
    """When each caller's last write ended (time.monotonic()), in a fixed-size table of
    WRITE_SLOTS float64 slots indexed by a hash of the caller, in memory shared by the
    processes that map the same file (`memexdb serve --workers N` makes one for its
    workers: `create`, then each worker `attach`es it), or private to this process.

    Two callers whose hashes share a slot share its time: the reads of one go to the
    primary after the other's writes too, for about POLL_S, which is safe. time.monotonic
    is CLOCK_MONOTONIC on Linux (and mach_absolute_time on macOS): one clock for every
    process of the machine, so a time one worker writes compares with another's.

    A read is one aligned 8-byte load, without a lock; a write takes an exclusive flock
    on the file (per-process locks, a syscall each way) so that two workers writing one
    slot at once keep the later time."""

    def __init__(self, table: mmap.mmap, fd: int | None = None) -> None:
        self._table = table
        self._fd = fd

    @classmethod
    def private(cls) -> WriteTable:
        return cls(mmap.mmap(-1, WRITE_SLOTS * _SLOT.size))

    @staticmethod
    def create() -> Path:
        """A new zeroed table file for a service's workers (in /dev/shm where there is
        one: memory, not disk); the caller removes it when the service stops."""
        shm = Path("/dev/shm")  # noqa: S108 (mkstemp: O_EXCL, mode 0600)
        fd, path = tempfile.mkstemp(prefix="memexdb-writes-", dir=shm if shm.is_dir() else None)
        try:
            os.ftruncate(fd, WRITE_SLOTS * _SLOT.size)
        finally:
            os.close(fd)
        return Path(path)

    @classmethod
    def attach(cls, path: str | Path) -> WriteTable:
        fd = os.open(path, os.O_RDWR)
        try:
            table = mmap.mmap(fd, WRITE_SLOTS * _SLOT.size)
        except BaseException:
            os.close(fd)
            raise
        return cls(table, fd)

    @staticmethod
    def _offset(caller: str) -> int:
        digest = hashlib.blake2b(caller.encode(), digest_size=8).digest()
        return int.from_bytes(digest, "little") % WRITE_SLOTS * _SLOT.size

    def last_write(self, caller: str) -> float:
        return float(_SLOT.unpack_from(self._table, self._offset(caller))[0])

    def wrote(self, caller: str, at: float) -> None:
        offset = self._offset(caller)
        if self._fd is None:
            if at > _SLOT.unpack_from(self._table, offset)[0]:
                _SLOT.pack_into(self._table, offset, at)
            return
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            if at > _SLOT.unpack_from(self._table, offset)[0]:
                _SLOT.pack_into(self._table, offset, at)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        self._table.close()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


@dataclass
class Replica:
    dsn: str
    pool: FailFastAsyncPool
    up: bool = False
    covered_at: float = float("-inf")  # monotonic; see the module's docstring
    replayed: int = 0  # its replay position at the monitor's last probe (a pg_lsn)
    probed_at: float = float("-inf")  # monotonic: the last probe while down
    served: int = 0
    fell_back: int = 0


@dataclass
class ReplicaRouter:
    primary_dsn: str
    replicas: list[Replica]
    max_lag_s: float
    # per caller (API key or operator): when its last write through this service ended
    # (shared by its workers), and when it was last on the primary through this process
    writes: WriteTable = field(default_factory=WriteTable.private)
    on_primary_at: dict[str, float] = field(default_factory=dict)
    _history: deque[tuple[float, int]] = field(default_factory=lambda: deque(maxlen=_HISTORY))
    _task: asyncio.Task[None] | None = None
    _primary: psycopg.AsyncConnection[Any] | None = None  # the monitor's
    _next: int = 0

    @classmethod
    async def open(
        cls,
        primary_dsn: str,
        dsns: Sequence[str],
        *,
        max_lag_s: float,
        pool_size: int,
        writes_table: str | Path | None = None,
    ) -> ReplicaRouter:
        """`writes_table`: the file of a WriteTable shared with other processes (None:
        this process's own)."""
        writes = WriteTable.private() if writes_table is None else WriteTable.attach(writes_table)
        replicas = [Replica(dsn, async_pool(dsn, min_size=0, max_size=pool_size)) for dsn in dsns]
        for replica in replicas:
            await replica.pool.open(wait=False)
        router = cls(primary_dsn, replicas, max_lag_s, writes)
        await router.poll()  # know the replicas before the first request
        router._task = asyncio.create_task(router._monitor(), name="memexdb-replicas")
        return router

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._primary is not None:
            await self._primary.close()
        for replica in self.replicas:
            await replica.pool.close()
        self.writes.close()

    # --- routing ------------------------------------------------------------------------

    def pick(self, caller: str, *, entering: bool = True, min_lsn: int = 0) -> Replica | None:
        """The replica for a read of `caller` now, or None: the primary. `entering`: the
        call enters its caller (memex._enter), which records the key's use on the primary.
        `min_lsn`: the replica must have replayed past it (the request's session token)."""
        now = monotonic()
        last_on_primary = self.on_primary_at.get(caller, float("-inf"))
        if entering and now - last_on_primary > KEY_REFRESH_S:
            return None
        wrote = self.writes.last_write(caller)
        n = len(self.replicas)
        for i in range(n):
            replica = self.replicas[(self._next + i) % n]
            if (
                replica.up
                and replica.covered_at > wrote
                and replica.replayed >= min_lsn
                and now - replica.covered_at <= self.max_lag_s
            ):
                self._next = (self._next + i + 1) % n
                return replica
        return None

    def used_primary(self, caller: str, *, wrote: bool, entered: bool) -> None:
        now = monotonic()
        if entered:
            self.on_primary_at[caller] = now
        if wrote:
            self.writes.wrote(caller, now)

    def failed(self, replica: Replica, error: BaseException) -> None:
        """A call on `replica` failed for a reason the primary does not share: it goes to
        the primary; a lost connection takes the replica out until the monitor sees it."""
        replica.fell_back += 1
        if isinstance(error, REPLICA_DOWN):
            if replica.up:
                log.warning("read replica %s failed (%s): reads go elsewhere", replica.dsn, error)
            replica.up = False

    # --- the monitor --------------------------------------------------------------------

    async def _monitor(self) -> None:
        while True:
            await asyncio.sleep(POLL_S)
            try:
                await self.poll()
            except Exception:  # the primary is down: the database watch deals with that
                log.debug("replica monitor: the primary did not answer", exc_info=True)
            self._forget(monotonic() - max(KEY_REFRESH_S, self.max_lag_s) - 1.0)

    async def poll(self) -> None:
        taken = monotonic()  # before the read: every commit that ended before is in it
        if self._primary is None or self._primary.closed or self._primary.broken:
            self._primary = await psycopg.AsyncConnection.connect(
                self.primary_dsn, autocommit=True, connect_timeout=2
            )
        try:
            row = await (await self._primary.execute(PRIMARY_LSN)).fetchone()
        except BaseException:
            await self._primary.close()
            raise
        assert row is not None
        self._history.append((taken, lsn(row[0])))
        await asyncio.gather(*(self._probe_replica(r) for r in self.replicas))

    async def _probe_replica(self, replica: Replica) -> None:
        try:
            async with asyncio.timeout(PROBE_TIMEOUT_S):
                if replica.up:
                    async with replica.pool.connection(timeout=PROBE_TIMEOUT_S) as conn:
                        row = await (await conn.execute(REPLAY_LSN)).fetchone()
                else:
                    # down: a connection of its own, not the pool's (whose reconnection
                    # attempts would log each failure), and at most every DOWN_PROBE_S
                    if monotonic() - replica.probed_at < DOWN_PROBE_S:
                        return
                    replica.probed_at = monotonic()
                    async with await psycopg.AsyncConnection.connect(
                        replica.dsn, autocommit=True
                    ) as conn:
                        row = await (await conn.execute(REPLAY_LSN)).fetchone()
        except Exception as exc:
            if replica.up:
                log.warning("read replica %s is down (%s)", replica.dsn, exc)
            replica.up = False
            return
        if row is None or not row[0] or row[1] is None:
            replica.up = False  # promoted, or not a standby: not a replica of this primary
            return
        replayed = lsn(row[1])
        replica.replayed = max(replica.replayed, replayed)
        for taken, position in reversed(self._history):
            if position <= replayed:
                replica.covered_at = max(replica.covered_at, taken)
                break
        if not replica.up:
            log.info("read replica %s serves reads", replica.dsn)
        replica.up = True

    def _forget(self, before: float) -> None:
        seen = self.on_primary_at
        if len(seen) > 1024:
            for caller in [c for c, t in seen.items() if t < before]:
                del seen[caller]

    def stats(self) -> list[dict[str, Any]]:
        now = monotonic()
        return [
            {
                "dsn": r.dsn,
                "up": r.up,
                "lag_s": now - r.covered_at,
                "served": r.served,
                "fell_back": r.fell_back,
            }
            for r in self.replicas
        ]
