"""The embed worker: embeds the memories SQL queued in memex.embed_queue (a summary that
consolidation wrote with its sources' centroid as a stand-in vector), with the process's
own embedder, each in full however long (memexdb.embedding.long_text).

One batch is one transaction (AsyncMemex.embed_queued): memex.embed_queue_take locks the
due entries (FOR UPDATE SKIP LOCKED), the contents are embedded, memex.set_embeddings
stores each vector whose memory still has that content (and dequeues it), and
memex.embed_queue_failed backs off the ones whose embedding failed. A process that dies
in between takes its transaction with it: PostgreSQL rolls it back and every entry is
queued as before, to be taken at once by the next worker (no lease to wait out). The cost
is a transaction open while a batch is embedded: memex.embed_queue_take bounds a batch's
text, so that is seconds.

It runs as a scheduled job (memexdb.runtime.jobs): in one process per database, the one
holding the jobs lock, so that one model at a time spends the machine's cores on the
queue while the others serve requests. SKIP LOCKED keeps any other drainer (another
deployment's worker, a script calling the same SQL) correct alongside it. NOTIFY
memex_embed (sent by memex._queue_embedding at commit) wakes it at once; it also polls
every MEMEX_EMBED_POLL_SECONDS, in case a notification was missed, and wakes when a
failed entry's backoff ends.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime

from memexdb.client import AsyncMemex
from memexdb.runtime.jobs import Job

log = logging.getLogger("memexdb.jobs")

CHANNEL = "memex_embed"  # memex._queue_embedding notifies it
# One run drains batches for at most this long, then lets the job loop run it again at
# once (a stopping process waits for one batch at most, not for the whole queue).
RUN_BUDGET_SECONDS = 30.0


async def drain(memex: AsyncMemex) -> float | None:
    """The job's run: batches until the queue has nothing due (or RUN_BUDGET_SECONDS
    passed: then again at once). Returns the delay until the next entry is due, if that
    comes before the poll."""
    started = time.monotonic()
    written = failed = 0
    while True:
        batch = await memex.embed_queued()
        for error in batch.errors:
            log.warning("embedding queued memory %s", error)
        written, failed = written + batch.written, failed + batch.failed
        # Nothing left; or nothing that could be written now (memories being changed by
        # a writer at this moment): not again in a tight loop, at the next poll.
        if batch.taken == 0 or batch.written + batch.failed == 0:
            break
        if time.monotonic() - started > RUN_BUDGET_SECONDS:
            log.info("embed queue: %d memories embedded in this run, more to come", written)
            return 0.0
    if written or failed:
        log.debug("embed queue: %d memories embedded, %d failed", written, failed)
    depth = await memex.embed_queue_depth()
    if depth.next_attempt_at is None or depth.due:
        # empty, or what is due is another worker's now: poll
        return None
    return max(0.0, (depth.next_attempt_at - datetime.now(UTC)).total_seconds())


def embed_job(poll_seconds: float) -> Job:
    return Job("embed", poll_seconds, drain, wake_channel=CHANNEL)
