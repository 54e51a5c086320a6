"""The consolidation jobs, for databases where pg_cron does not run them: condensing old
memories (memexdb.agentic.consolidation.condense, on by default: MEMEX_CONDENSE_ENABLED)
and dreaming over files (memexdb.agentic.consolidation.dream, opt-in:
MEMEX_DREAM_ENABLED), each on the schedule of memex.dream_config (interval_seconds).

Like every scheduled job they run in one process per database (memexdb.runtime.jobs),
and not at all where pg_cron runs the same job (memex-consolidate, memex-dream). The
database's dream_config.enabled stays the master switch (checked in SQL, so pg_cron obeys
it too). A job wakes every CHECK_SECONDS to read the interval, so a changed interval
applies within that time. Every tick logs one line at info level: what it did, or that
it skipped (nothing due).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable

from memexdb import pg_cron
from memexdb.agentic import consolidation
from memexdb.client import AsyncMemex
from memexdb.config import Settings
from memexdb.consolidation.models import ConsolidationJob
from memexdb.runtime.jobs import Job
from memexdb.types import ConsolidationRun

log = logging.getLogger("memexdb.jobs")

CHECK_SECONDS = 30.0

_TICKS: dict[ConsolidationJob, Callable[[AsyncMemex], Awaitable[list[ConsolidationRun]]]] = {
    "condense": lambda memex: consolidation.condense(memex),
    "dream": lambda memex: consolidation.dream(memex),
}


class DreamSchedule:
    """Runs a tick of `job` when dream_config.interval_seconds have passed since the last
    one."""

    def __init__(self, job: ConsolidationJob) -> None:
        self.job = job
        self.last_tick: float | None = None

    async def run(self, memex: AsyncMemex) -> float | None:
        config = await memex.dream_config()
        now = time.monotonic()
        if not config.enabled or (
            self.last_tick is not None and now - self.last_tick < config.interval_seconds
        ):
            return None
        self.last_tick = now
        runs = await _TICKS[self.job](memex)
        if not runs:
            log.info("%s tick: no tenant due; skipped", self.job)
            return None
        outcome = Counter(f"{r.kind} {r.status}" for r in runs)
        log.info(
            "%s tick: %s",
            self.job,
            ", ".join(f"{n} {what}" for what, n in sorted(outcome.items())),
        )
        return None


def scheduled_consolidation(settings: Settings) -> frozenset[ConsolidationJob]:
    """The consolidation jobs this process offers to run (MEMEX_CONDENSE_ENABLED,
    MEMEX_DREAM_ENABLED)."""
    wanted: dict[ConsolidationJob, bool] = {
        "condense": settings.condense_enabled,
        "dream": settings.dream_enabled,
    }
    return frozenset(job for job, on in wanted.items() if on)


def consolidation_job(job: ConsolidationJob) -> Job:
    return Job(
        job, CHECK_SECONDS, DreamSchedule(job).run, pg_cron_job=pg_cron.CONSOLIDATION[job].name
    )
