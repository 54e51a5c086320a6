"""Scheduled jobs, run by one process per database.

Every memexdb process (each uvicorn worker, each `memexdb mcp`) runs a JobRunner; the one
whose dedicated connection holds a session-level advisory lock runs the jobs, the others
try to take the lock every `retry_seconds`. The lock goes with its session: when that
process ends, is killed, or loses its connection (a database restart), another process
takes over within `retry_seconds`. (A pooler in transaction mode between memexdb and
PostgreSQL would break session locks: point MEMEX_DATABASE_URL at PostgreSQL itself.)

To add a job: a Job(name, interval, run) in memexdb.runtime.process.default_jobs. A job
that pg_cron can run instead (memexdb.pg_cron, `memexdb schedule`) names its pg_cron job:
while pg_cron runs that job in this database, the runner leaves it to pg_cron (checked at
the start and before each run, so `memexdb schedule --unschedule` hands it back).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import psycopg

from memexdb import pg_cron
from memexdb.client import AsyncMemex

log = logging.getLogger("memexdb.jobs")

JOBS_LOCK_KEY = 0x6D656D65786A6F62  # "memexjob"; memexdb.migrations locks another key
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


async def _run_job(job: Job, memex: AsyncMemex, conn: psycopg.AsyncConnection) -> None:
    deferred = await _left_to_pg_cron(job, conn, False)
    delay = job.interval
    while True:
        await asyncio.sleep(delay)
        delay = job.interval
        deferred = await _left_to_pg_cron(job, conn, deferred)
        if deferred:
            continue
        try:
            follow_up = await job.run(memex)
        except Exception:
            log.warning("job %s failed; next run in %ss", job.name, job.interval, exc_info=True)
            continue
        if follow_up is not None:
            delay = min(job.interval, follow_up)


async def _try_lock(conn: psycopg.AsyncConnection) -> bool:
    cur = await conn.execute("select pg_try_advisory_lock(%s)", (JOBS_LOCK_KEY,))
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
        tasks = [asyncio.create_task(_run_job(job, self.memex, conn)) for job in self.jobs]
        try:
            # The session holds the lock: while it answers, no other process runs jobs.
            # One that stops answering (a network partition) may have lost it already.
            while True:
                await asyncio.sleep(self.retry_seconds)
                async with asyncio.timeout(CHECK_TIMEOUT_SECONDS):
                    await conn.execute("select 1")
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
