"""What one memexdb process runs on its database: the client (connection pool and
embedder), a watch that fails requests at once while the database is down, and the
scheduled jobs (run by one process per database)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from memexdb import metrics, pg_cron
from memexdb.client import AsyncMemex
from memexdb.config import Settings
from memexdb.db import FailFastAsyncPool
from memexdb.llm import ChatModel
from memexdb.runtime.consolidation import consolidation_job, scheduled_consolidation
from memexdb.runtime.embed_worker import embed_job
from memexdb.runtime.embedder import embedder_for
from memexdb.runtime.jobs import Job, JobRunner, cancel_all
from memexdb.runtime.maintenance import maintenance_job
from memexdb.runtime.startup import when_database_is_up
from memexdb.runtime.watch import DatabaseWatch

POOL_METRICS_INTERVAL = 1.0  # psycopg_pool's stats: a dict read, no I/O


async def _pool_metrics(pool: FailFastAsyncPool) -> None:
    """Keep memex_db_pool_connections current (forever; cancel to stop): with several
    workers a scrape reads every worker's last figures, not only its own."""
    while True:
        metrics.observe_pool(pool.get_stats())
        await asyncio.sleep(POOL_METRICS_INTERVAL)


def default_jobs(settings: Settings) -> list[Job]:
    """The jobs every memexdb process offers to run (see memexdb.runtime.jobs)."""
    jobs = []
    if settings.maintenance_interval_seconds > 0:
        jobs.append(maintenance_job(settings.maintenance_interval_seconds))
    jobs += [consolidation_job(job) for job in sorted(scheduled_consolidation(settings))]
    if settings.embed_poll_seconds > 0:
        jobs.append(embed_job(settings.embed_poll_seconds))
    return jobs


@dataclass
class Runtime:
    """A process's open client (`memex`, for the frontends), its database watch and its
    job runner; `Runtime.open(settings, dsn)` runs them until exit."""

    memex: AsyncMemex
    watch: DatabaseWatch
    jobs: JobRunner

    @classmethod
    @contextlib.asynccontextmanager
    async def open(
        cls,
        settings: Settings,
        dsn: str,
        *,
        pool_size: int | None = None,
        jobs: Sequence[Job] | None = None,
        remedy: str | None = None,
    ) -> AsyncIterator[Runtime]:
        """Connect to the (migrated) database at `dsn` and run the watch and the jobs
        until exit. `remedy`: what a refused call tells its caller (None: the service's
        Authorization header)."""
        # Passing the plain embedder makes the client own (and close) its batcher.
        # Beyond loopback every call needs a key, even while the database has none.
        embedder = embedder_for(settings)
        llm = ChatModel.from_settings(settings)
        # A worker uvicorn (re)starts during an outage waits for the database
        # (memexdb.runtime.startup) rather than failing after one pool timeout.
        memex = await when_database_is_up(
            lambda timeout: AsyncMemex.connect(
                dsn,
                embedder=embedder,
                max_size=pool_size or settings.pool_size,
                key=settings.api_key,
                require_key=not settings.loopback_only,
                remedy=remedy,
                llm=llm,
                open_timeout=timeout,
                replicas=settings.read_database_url_list,
                replica_max_lag=settings.replica_max_lag_seconds,
                writes_table=settings.writes_table,
            )
        )
        chosen = default_jobs(settings) if jobs is None else jobs
        # what dream_config reports as run by the service: the consolidation jobs it runs
        memex.scheduled = frozenset(j.name for j in chosen if j.name in pg_cron.CONSOLIDATION)
        async with memex:
            pool = memex.pool
            assert isinstance(pool, FailFastAsyncPool)  # memexdb.db.async_pool makes one
            runtime = cls(
                memex,
                DatabaseWatch(dsn, pool),
                JobRunner(dsn, memex, chosen),
            )
            tasks = [
                asyncio.create_task(runtime.watch.run(), name="memexdb-watch"),
                asyncio.create_task(runtime.jobs.run(), name="memexdb-jobs"),
                asyncio.create_task(_pool_metrics(pool), name="memexdb-pool-metrics"),
            ]
            try:
                yield runtime
            finally:
                await cancel_all(tasks)
