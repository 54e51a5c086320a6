"""Scheduled jobs, run by one process per database.

Every memexdb process (each uvicorn worker, each `memexdb mcp`) runs a JobRunner; the one
whose dedicated connection holds a session-level advisory lock (its key derived from
memex.lock_secret, see memex._lock_key) runs the jobs, the others
try to take the lock every `retry_seconds`. The lock goes with its session: when that
process ends, is killed, or loses its connection (a database restart), another process
takes over within `retry_seconds`. (A pooler in transaction mode between memexdb and
PostgreSQL would break session locks: point MEMEX_DATABASE_URL at PostgreSQL itself.)

To add a job: a Job(name, interval, run) in memexdb.runtime.process.default_jobs. A job
that pg_cron can run instead (memexdb.pg_cron, `memexdb schedule`) names its pg_cron job:
while pg_cron runs that job in this database, the runner leaves it to pg_cron (checked at
the start and before each run, so `memexdb schedule --unschedule` hands it back). A job
with a `wake_channel` also runs as soon as a NOTIFY on that channel arrives (a connection
of its own listens), and once at once when the process starts leading.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import psycopg
import psycopg.sql

from memexdb import pg_cron
from memexdb.client import AsyncMemex
from memexdb.errors import DatabaseUnavailable

log = logging.getLogger("memexdb.jobs")

RETRY_SECONDS = 5.0
CONNECT_TIMEOUT_SECONDS = 5
CHECK_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True)
class Job:
    """`run` every `interval` seconds (the first run one interval after start). A run
    may return a shorter delay before the next one, e.g. while work is left over; an
    exception is logged and the job runs again after its interval."""

    name: str
    interval: float
    run: Callable[[AsyncMemex], Awaitable[float | None]]
    pg_cron_job: str | None = None  # the pg_cron job (cron.job.jobname) doing the same
    # NOTIFY on this channel runs the job at once; the interval still bounds every wait,
    # in case a notification is missed (sent while no process listened, or lost with the
    # listening connection).
    wake_channel: str | None = None


async def _left_to_pg_cron(job: Job, conn: psycopg.AsyncConnection, before: bool) -> bool:
    """Whether pg_cron runs `job` here now (`before`: what the last check said); logs
    when that changes."""
    if job.pg_cron_job is None:
        return False
    try:
        async with asyncio.timeout(CHECK_TIMEOUT_SECONDS):
            now = job.pg_cron_job in await pg_cron.runs(conn, [job.pg_cron_job])
    except (psycopg.Error, TimeoutError) as exc:
        # Running it here too is safe (the jobs may run concurrently); the runner's own
        # check of this connection notices a database that went away.
        log.warning("job %s: could not read pg_cron's jobs (%s); running it here", job.name, exc)
        return False
    if now and not before:
        log.info(
            "job %s: pg_cron runs it in this database (its job %s); this process leaves it"
            " to pg_cron",
            job.name,
            job.pg_cron_job,
        )
    elif before and not now:
        log.info(
            "job %s: pg_cron no longer runs %s here; this process runs it",
            job.name,
            job.pg_cron_job,
        )
    return now


async def cancel_all(tasks: Sequence[asyncio.Task[None]]) -> None:
    """Cancel every task, then wait for each to finish."""
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _pause(delay: float, wake: asyncio.Event | None) -> None:
    """Sleep `delay` seconds, or until `wake` is set (then clear it: a notification that
    arrives during the run that follows sets it again)."""
    if wake is None:
        await asyncio.sleep(delay)
        return
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(delay):
            await wake.wait()
    wake.clear()


async def _listen(dsn: str, channel: str, wake: asyncio.Event, retry_seconds: float) -> None:
    """Set `wake` on every NOTIFY on `channel` (and on each new connection: what was
    notified while nobody listened is waiting), reconnecting after `retry_seconds`."""
    listen = psycopg.sql.SQL("listen {}").format(psycopg.sql.Identifier(channel))
    while True:
        try:
            async with await psycopg.AsyncConnection.connect(
                dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS
            ) as conn:
                await conn.execute(listen)
                wake.set()
                async for _ in conn.notifies():
                    wake.set()
        except (psycopg.Error, OSError) as exc:  # the database went away: poll meanwhile
            log.debug("listening on %s failed: %r", channel, exc)
        await asyncio.sleep(retry_seconds)


async def _run_job(
    job: Job,
    memex: AsyncMemex,
    conn: psycopg.AsyncConnection,
    wake: asyncio.Event | None = None,
) -> None:
    deferred = await _left_to_pg_cron(job, conn, False)
    # A job that is woken starts at once: work may have come while nobody listened.
    delay = job.interval if wake is None else 0.0
    while True:
        await _pause(delay, wake)
        delay = job.interval
        deferred = await _left_to_pg_cron(job, conn, deferred)
        if deferred:
            continue
        try:
            follow_up = await job.run(memex)
        except DatabaseUnavailable:
            # an outage, not a bug: the process logs the outage once; no traceback here
            log.warning("job %s: the database is unavailable; next run in %ss", job.name, delay)
            continue
        except Exception:
            log.warning("job %s failed; next run in %ss", job.name, job.interval, exc_info=True)
            continue
        if follow_up is not None:
            delay = min(job.interval, follow_up)


async def _try_lock(conn: psycopg.AsyncConnection) -> bool:
    # a key derived from the database's lock secret: a tenant role cannot take it first
    cur = await conn.execute("select pg_try_advisory_lock(memex._lock_key('jobs', ''))")
    row = await cur.fetchone()
    return bool(row and row[0])


class JobRunner:
    """Runs `jobs` in this process while it holds the database's jobs lock."""

    def __init__(
        self,
        dsn: str,
        memex: AsyncMemex,
        jobs: Sequence[Job],
        *,
        retry_seconds: float = RETRY_SECONDS,
    ) -> None:
        self.dsn = dsn
        # Scheduled jobs act for every tenant: as the operator.
        self.memex = memex.as_operator("jobs")
        self.jobs = list(jobs)
        self.retry_seconds = retry_seconds
        self.leading = False

    async def run(self) -> None:
        """Forever (cancel to stop; the lock is released with the connection)."""
        if not self.jobs:
            return
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self.dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS
                ) as conn:
                    await self._lead_when_possible(conn)
            except (psycopg.Error, TimeoutError) as exc:  # the database went away
                log.debug("jobs lock connection failed: %r", exc)
            finally:
                self.leading = False
            await asyncio.sleep(self.retry_seconds)

    async def _lead_when_possible(self, conn: psycopg.AsyncConnection) -> None:
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for returns the result of a
        # call that finishes as the task is cancelled and loses the cancellation; a
        # process stopping just as it won the lock then led forever and never exited.
        while True:
            async with asyncio.timeout(CHECK_TIMEOUT_SECONDS):
                locked = await _try_lock(conn)
            if locked:
                break
            await asyncio.sleep(self.retry_seconds)
        self.leading = True
        names = ", ".join(job.name for job in self.jobs)
        log.info("this process runs the scheduled jobs of its database (%s)", names)
        tasks = []
        for job in self.jobs:
            wake = None
            if job.wake_channel is not None:
                wake = asyncio.Event()
                listener = _listen(self.dsn, job.wake_channel, wake, self.retry_seconds)
                tasks.append(asyncio.create_task(listener))
            tasks.append(asyncio.create_task(_run_job(job, self.memex, conn, wake)))
        try:
            # The session holds the lock: while it answers, no other process runs jobs.
            # One that stops answering (a network partition) may have lost it already.
            while True:
                await asyncio.sleep(self.retry_seconds)
                async with asyncio.timeout(CHECK_TIMEOUT_SECONDS):
                    await conn.execute("select 1")
        finally:
            await cancel_all(tasks)
