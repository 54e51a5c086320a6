"""Scheduled jobs run in one process per database: the JobRunner holding the database's
jobs lock runs them; another takes over once it is gone. Real runners on a real database
(each in a task here, as each memexdb process runs one)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from memexdb import AsyncMemex, pg_cron
from memexdb.config import Settings
from memexdb.errors import DatabaseUnavailable
from memexdb.runtime import Job, JobRunner, default_jobs
from memexdb.runtime.consolidation import consolidation_job
from memexdb.runtime.maintenance import maintenance_job
from tests.sqlapi import store_expired, unit

RETRY = 0.2
BOUND = 20.0  # seconds any wait below may take at most


async def wait_for(check: Callable[[], object]) -> bool:
    """Poll `check` until it is truthy, for BOUND seconds at most."""
    for _ in range(int(BOUND / 0.02)):
        if check():
            return True
        await asyncio.sleep(0.02)
    return bool(check())


def recorder(runs: list[str], name: str) -> Job:
    async def run(memex: AsyncMemex) -> float | None:
        runs.append(name)
        return None

    return Job("record", 0.05, run)


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_one_runner_per_database_runs_the_jobs_and_another_takes_over(
    dsn: str, amemex: AsyncMemex
) -> None:
    runs: list[str] = []
    first = JobRunner(dsn, amemex, [recorder(runs, "first")], retry_seconds=RETRY)
    second = JobRunner(dsn, amemex, [recorder(runs, "second")], retry_seconds=RETRY)
    first_task = asyncio.create_task(first.run())
    assert await wait_for(lambda: first.leading)
    second_task = asyncio.create_task(second.run())
    try:
        assert await wait_for(lambda: runs.count("first") >= 5)
        await asyncio.sleep(3 * RETRY)  # the second has tried the lock a few times
        assert "second" not in runs and not second.leading

        await stop(first_task)  # the process that ran them ends: its session ends too
        assert await wait_for(lambda: "second" in runs)
        assert second.leading
        taken_over_at = len(runs)
        await asyncio.sleep(0.3)
        assert set(runs[taken_over_at:]) == {"second"}
    finally:
        await stop(first_task)
        await stop(second_task)


async def test_a_failing_run_is_retried_and_a_follow_up_comes_sooner(
    dsn: str, amemex: AsyncMemex
) -> None:
    times: list[float] = []

    async def run(memex: AsyncMemex) -> float | None:
        times.append(time.monotonic())
        if len(times) == 1:
            raise RuntimeError("a failing run is logged, not fatal")
        return 0.05  # work left over: come back sooner than the interval

    runner = JobRunner(dsn, amemex, [Job("flaky", 0.5, run)], retry_seconds=RETRY)
    task = asyncio.create_task(runner.run())
    try:
        assert await wait_for(lambda: len(times) >= 4)
    finally:
        await stop(task)
    assert times[1] - times[0] >= 0.45  # after the failure: the full interval
    assert times[3] - times[2] < 0.4  # follow-ups: the shorter delay


async def test_a_run_that_meets_an_outage_logs_one_line_without_a_traceback(
    dsn: str, amemex: AsyncMemex, caplog: pytest.LogCaptureFixture
) -> None:
    """The process reports the outage itself; a job failing on it is not a bug to trace."""
    runs: list[float] = []

    async def run(memex: AsyncMemex) -> float | None:
        runs.append(time.monotonic())
        raise DatabaseUnavailable("database is unavailable")

    runner = JobRunner(dsn, amemex, [Job("outage", 0.05, run)], retry_seconds=RETRY)
    task = asyncio.create_task(runner.run())
    try:
        with caplog.at_level(logging.WARNING, logger="memexdb.jobs"):
            assert await wait_for(lambda: len(runs) >= 2)
    finally:
        await stop(task)
    records = [r for r in caplog.records if r.name == "memexdb.jobs"]
    assert records and all("unavailable" in r.getMessage() for r in records)
    assert all(r.exc_info is None for r in records)


async def test_the_maintenance_job_deletes_expired_memories(dsn: str, amemex: AsyncMemex) -> None:
    past = datetime.now(UTC) - timedelta(seconds=1)
    with psycopg.connect(dsn, autocommit=True) as conn:  # (memex.store refuses a past expiry)
        store_expired(conn, "this memory has expired", unit((0, 1.0)), past, agent="jobs", user="u")
    await amemex.store("jobs", "u", "this one has not")
    runner = JobRunner(dsn, amemex, [maintenance_job(0.1)], retry_seconds=RETRY)
    task = asyncio.create_task(runner.run())

    async def expired_rows() -> int:
        # as the database owner: the pool's connections are memex_app, and see nothing
        # without a caller
        async with await psycopg.AsyncConnection.connect(dsn) as conn:
            cur = await conn.execute("select count(*) from memex.memories where agent_id = 'jobs'")
            row = await cur.fetchone()
            return int(row[0]) if row else -1

    try:
        for _ in range(int(BOUND / 0.05)):
            if await expired_rows() == 1:
                break
            await asyncio.sleep(0.05)
        assert await expired_rows() == 1
    finally:
        await stop(task)


def test_condensing_runs_by_default_and_dreaming_over_files_is_opt_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("MEMEX_CONDENSE_ENABLED", "MEMEX_DREAM_ENABLED"):
        monkeypatch.delenv(name, raising=False)
    jobs = {job.name: job for job in default_jobs(Settings.from_env())}
    assert "condense" in jobs and "dream" not in jobs
    # where pg_cron runs memex-consolidate in this database, the service leaves it alone
    assert jobs["condense"].pg_cron_job == pg_cron.CONSOLIDATE.name
    monkeypatch.setenv("MEMEX_DREAM_ENABLED", "true")
    monkeypatch.setenv("MEMEX_CONDENSE_ENABLED", "false")
    jobs = {job.name: job for job in default_jobs(Settings.from_env())}
    assert "condense" not in jobs and jobs["dream"].pg_cron_job == pg_cron.DREAM.name


async def test_a_tick_with_nothing_due_logs_its_skip_at_info(
    amemex: AsyncMemex, caplog: pytest.LogCaptureFixture
) -> None:
    operator = amemex.as_operator("test")
    with caplog.at_level(logging.INFO, logger="memexdb.jobs"):
        for job in ("condense", "dream"):
            await consolidation_job(job).run(operator)
    skipped = [r for r in caplog.records if "no tenant due; skipped" in r.getMessage()]
    assert [(r.levelno, r.getMessage().split()[0]) for r in skipped] == [
        (logging.INFO, "condense"),
        (logging.INFO, "dream"),
    ]


async def test_dream_config_says_who_runs_each_job_here(amemex: AsyncMemex) -> None:
    # a client outside a service schedules nothing; the embedded server has no pg_cron
    config = await amemex.dream_config()
    assert (config.enabled, config.condense, config.dream) == (
        True,
        "not scheduled",
        "not scheduled",
    )
    service = amemex.as_operator("test")
    service.scheduled = frozenset({"condense"})  # as memexdb.runtime.Runtime sets it
    config = await service.with_key(None).dream_config()  # carried to each caller
    assert (config.condense, config.dream) == ("service", "not scheduled")
    off = await service.set_dream_config(enabled=False)
    assert (off.condense, off.dream) == ("disabled", "disabled")
