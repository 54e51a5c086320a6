"""The consolidation job ("dreaming"): memexdb.agentic.consolidation.tick on the schedule
of memex.dream_config (interval_seconds), for servers where pg_cron does not run it.

MEMEX_DREAM_ENABLED turns the job on in the service; the database's dream_config.enabled
stays the master switch (checked in SQL, so pg_cron obeys it too). The job wakes every
CHECK_SECONDS to read the interval, so a changed interval applies within that time. A
tick with nothing to do writes nothing and logs one line at debug level; one that did
something logs one line at info level.
"""

from __future__ import annotations

import logging
import time
from collections import Counter

from memexdb import pg_cron
from memexdb.agentic import consolidation
from memexdb.client import AsyncMemex
from memexdb.runtime.jobs import Job

log = logging.getLogger("memexdb.jobs")

CHECK_SECONDS = 30.0


class DreamSchedule:
    """Runs a tick when dream_config.interval_seconds have passed since the last one."""

    def __init__(self) -> None:
        self.last_tick: float | None = None

    async def run(self, memex: AsyncMemex) -> float | None:
        config = await memex.dream_config()
        now = time.monotonic()
        if not config.enabled or (
            self.last_tick is not None and now - self.last_tick < config.interval_seconds
        ):
            return None
        self.last_tick = now
        runs = await consolidation.tick(memex)
        if not runs:
            log.debug("consolidation tick: nothing to do")
            return None
        outcome = Counter(f"{r.kind} {r.status}" for r in runs)
        log.info(
            "consolidation tick: %s",
            ", ".join(f"{n} {what}" for what, n in sorted(outcome.items())),
        )
        return None


def dreaming_job() -> Job:
    # `memexdb schedule` registers condensing and dreaming together: where pg_cron runs
    # them in this database, the service leaves both to it
    return Job(
        "consolidation", CHECK_SECONDS, DreamSchedule().run, pg_cron_job=pg_cron.CONSOLIDATE.name
    )
