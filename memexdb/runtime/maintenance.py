"""The maintenance job: memex.maintenance() for servers without pg_cron (expired
memories, stale rate-limit rows, tenants grown into the ANN index); where pg_cron runs it
(`memexdb schedule`), the service leaves it to pg_cron."""

from __future__ import annotations

import logging

from memexdb import pg_cron
from memexdb.client import AsyncMemex
from memexdb.runtime.jobs import Job

log = logging.getLogger("memexdb.jobs")

# While a grown tenant is being moved into the ANN index (in ~10 s calls), the next call
# follows after a short pause that lets the tenant's waiting inserts through.
FOLLOW_UP_SECONDS = 1.0


async def run_maintenance(memex: AsyncMemex) -> float | None:
    result = await memex.maintenance()
    if result.memories_indexed or result.tenants_indexed:
        log.info(
            "maintenance moved %d memories into the ANN index (%d tenant(s) done)",
            result.memories_indexed,
            result.tenants_indexed,
        )
        return FOLLOW_UP_SECONDS
    if result.expired_memories_deleted:
        return FOLLOW_UP_SECONDS  # that call committed before indexing: index next
    return None


def maintenance_job(interval_seconds: float) -> Job:
    return Job("maintenance", interval_seconds, run_maintenance, pg_cron.MAINTENANCE.name)
