"""The last hour of the service's metrics, for the console's overview charts.

Prometheus keeps totals, not history, and the service runs no Prometheus server: every
SAMPLE_INTERVAL_S the service reads its own totals (memexdb.metrics: every worker's, as a
scrape adds them up) and the embed queue depth into a bounded ring, and the overview
draws rates and latency quantiles from the differences between samples. Each worker
keeps its own ring of the whole service's totals, so any worker can draw the charts.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass

from memexdb import metrics
from memexdb.client import AsyncMemex
from memexdb.config import Settings

log = logging.getLogger("memexdb.console")

# MEMEX_METRICS_HISTORY_SECONDS' default (10 s: the ring holds the last hour)
SAMPLE_INTERVAL_S: float = Settings.model_fields["metrics_history_seconds"].default
SAMPLES_KEPT = 360
WINDOW = 6  # rates and quantiles of each point: over the 6 intervals before it (a minute)
# the latency histogram's bounds, +Inf last (the contract's buckets)
_BOUNDS = (*metrics.LATENCY_BUCKETS, float("inf"))


@dataclass(frozen=True, slots=True)
class Sample:
    """The service's totals at one time (counters only grow, except across a restart)."""

    at: float  # unix time
    requests: float
    client_errors: float  # 4xx
    server_errors: float  # 5xx
    latency: tuple[float, ...]  # cumulative requests per bucket of _BOUNDS
    stores: float  # memories stored
    searches: float  # memex.search* calls
    queue_depth: int | None  # memories waiting to be embedded; None: no answer


@dataclass(frozen=True, slots=True)
class Point:
    at: float
    value: float | None  # None: no data (a gap in the line)


def read_totals(at: float, queue_depth: int | None) -> Sample:
    """The service's totals now, from its Prometheus metrics."""
    requests = client_errors = server_errors = stores = searches = 0.0
    buckets = [0.0] * len(_BOUNDS)
    for metric in metrics.service_metrics():
        for s in metric.samples:
            if s.name == "memex_http_requests_total":
                requests += s.value
                status = s.labels.get("status", "")
                client_errors += s.value if status.startswith("4") else 0.0
                server_errors += s.value if status.startswith("5") else 0.0
            elif s.name == "memex_http_request_duration_seconds_bucket":
                buckets[bisect.bisect_left(_BOUNDS, float(s.labels["le"]))] += s.value
            elif s.name == "memex_memories_stored_total":
                stores += s.value
            elif s.name == "memex_sql_call_duration_seconds_count" and s.labels.get(
                "function", ""
            ).startswith("memex.search"):
                searches += s.value
    return Sample(
        at,
        requests,
        client_errors,
        server_errors,
        tuple(buckets),
        stores,
        searches,
        queue_depth,
    )


# How the embed queue depth is read (memexdb.rest.health: as GET /metrics reads it, bounded
# in time; None when the database does not answer).
DepthReader = Callable[[AsyncMemex], Awaitable[int | None]]


class History:
    """A bounded ring of samples, oldest first."""

    def __init__(
        self, depth: DepthReader, *, interval: float = SAMPLE_INTERVAL_S, keep: int = SAMPLES_KEPT
    ) -> None:
        self.samples: deque[Sample] = deque(maxlen=keep)
        self.interval = interval
        self._depth = depth

    async def sample(self, memex: AsyncMemex) -> None:
        """Record the totals now."""
        depth = await self._depth(memex)
        self.samples.append(read_totals(time.time(), depth))

    async def fresh(self, memex: AsyncMemex) -> list[Sample]:
        """The samples, with one taken now if the newest is older than half an interval
        (an app without the sampler running, or a page between two samples)."""
        if not self.samples or time.time() - self.samples[-1].at > self.interval / 2:
            await self.sample(memex)
        return list(self.samples)

    @contextlib.asynccontextmanager
    async def sampling(self, memex: AsyncMemex) -> AsyncIterator[None]:
        """Take a sample every interval while the app runs."""

        async def loop() -> None:
            while True:
                try:
                    await self.sample(memex)
                except Exception:  # never let the charts stop the service
                    log.debug("metrics history sample failed", exc_info=True)
                await asyncio.sleep(self.interval)

        task = asyncio.create_task(loop(), name="memexdb-metrics-history")
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _windows(samples: Sequence[Sample]) -> list[tuple[Sample, Sample]]:
    """(start, end) of the WINDOW intervals before each sample but the first (fewer at
    the beginning)."""
    return [(samples[max(0, end - WINDOW)], samples[end]) for end in range(1, len(samples))]


def per_minute(samples: Sequence[Sample], total: Callable[[Sample], float]) -> list[Point]:
    """The rate of a total, per minute, over the window before each sample."""
    points = []
    for start, end in _windows(samples):
        grown = total(end) - total(start)
        elapsed = end.at - start.at
        ok = grown >= 0 and elapsed > 0  # a total that went down: a restart
        points.append(Point(end.at, grown / elapsed * 60 if ok else None))
    return points


def latency_ms(samples: Sequence[Sample], q: float) -> list[Point]:
    """The q-quantile of request latency in ms over the window before each sample,
    interpolated within its histogram bucket (as Prometheus' histogram_quantile)."""
    points = []
    for start, end in _windows(samples):
        counts = [b - a for a, b in zip(start.latency, end.latency, strict=True)]
        value = quantile(q, counts)
        points.append(Point(end.at, value * 1000 if value is not None else None))
    return points


def quantile(q: float, cumulative: Sequence[float]) -> float | None:
    """The q-quantile of a histogram given as cumulative counts per bucket of _BOUNDS;
    None without observations. In the +Inf bucket: the largest finite bound."""
    total = cumulative[-1]
    if total <= 0 or any(c < 0 for c in cumulative):
        return None
    rank = q * total
    below = 0.0
    for i, count in enumerate(cumulative):
        if count >= rank:
            upper = _BOUNDS[i]
            if upper == float("inf"):
                return _BOUNDS[-2]
            lower = _BOUNDS[i - 1] if i else 0.0
            share = (rank - below) / (count - below) if count > below else 1.0
            return lower + (upper - lower) * share
        below = count
    return _BOUNDS[-2]


def gauge(samples: Sequence[Sample], value: Callable[[Sample], float | None]) -> list[Point]:
    return [Point(s.at, value(s)) for s in samples]
