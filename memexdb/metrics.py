"""Prometheus metrics of a memexdb process (`GET /metrics`), with the official client.

The names and labels are a contract with the dashboards (docs/operations.md, "Metrics");
every metric is prefixed `memex_`. Latency buckets resolve 0.1 ms to 10 s: an embedding takes a few
milliseconds and a search a few more, so a smallest bucket of 50 ms would show nothing.

Several workers (`memexdb serve --workers N`): the serve process gives them a fresh
PROMETHEUS_MULTIPROC_DIR before they start (prometheus_client's multiprocess mode: each
process writes its values to memory-mapped files there), and a scrape answered by any
worker adds up every worker's counters and histograms and the live workers' pool gauges.
Figures read from the database at scrape time (memex.metrics_snapshot) are the same
whichever worker reads them, so they are not written to those files at all.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

import prometheus_client
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from memexdb.types import MemoryType

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = prometheus_client.CONTENT_TYPE_LATEST

# 0.1 ms .. 10 s (the contract's buckets; +Inf is added by the client).
LATENCY_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)

# `_created` samples say when a series was first seen: noise for these dashboards, and
# absent in multiprocess mode anyway (one output whatever the worker count).
prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]

HTTP_REQUESTS = Counter(
    "memex_http_requests",
    "HTTP requests by route template, method and status",
    ["route", "method", "status"],
)
HTTP_DURATION = Histogram(
    "memex_http_request_duration_seconds",
    "HTTP request latency (until the response is sent) by route template and method",
    ["route", "method"],
    buckets=LATENCY_BUCKETS,
)
EMBEDDING_DURATION = Histogram(
    "memex_embedding_duration_seconds",
    "Inference time of one model call, by operation: embed (one text), embed_batch (more)",
    ["operation"],
    buckets=LATENCY_BUCKETS,
)
EMBEDDING_ERRORS = Counter(
    "memex_embedding_errors",
    "Model calls that failed, by operation (embed, embed_batch) and exception type",
    ["operation", "error_type"],
)
EMBEDDING_BATCH_SIZE = Histogram(
    "memex_embedding_batch_size",
    "Texts per embedding batch",
    buckets=BATCH_BUCKETS,
)
EMBEDDING_QUEUE_WAIT = Histogram(
    "memex_embedding_queue_wait_seconds",
    "Time a text waited for its batch's model call to start",
    buckets=LATENCY_BUCKETS,
)
SQL_DURATION = Histogram(
    "memex_sql_call_duration_seconds",
    "Latency of memex.* SQL function calls (the round trip, caller entry included)",
    ["function"],
    buckets=LATENCY_BUCKETS,
)
POOL_CONNECTIONS = Gauge(
    "memex_db_pool_connections",
    "Connections of the service's pools: in use, idle, and requests waiting for one",
    ["state"],
    multiprocess_mode="livesum",
)
MEMORIES_STORED = Counter(
    "memex_memories_stored", "Memories written (store, batch, import), by type", ["type"]
)
MEMORIES_SEARCHED = Counter(
    "memex_memories_searched", "Memories returned by searches, by type", ["type"]
)
MEMORIES_DELETED = Counter(
    "memex_memories_deleted", "Memories deleted one by one (not erasures), by type", ["type"]
)
FILE_WRITES = Counter(
    "memex_file_writes",
    "File-memory writes through the service, by operation (write, patch, delete, restore)",
    ["operation"],
)
RATE_LIMIT_REJECTIONS = Counter(
    "memex_rate_limit_rejections",
    "Calls refused by the per-minute limits (429), by kind",
    ["kind"],
)

# Series that exist from the start (at 0), so that dashboards and rates see them before
# the first event.
for _kind in MemoryType:
    for _counter in (MEMORIES_STORED, MEMORIES_SEARCHED, MEMORIES_DELETED):
        _counter.labels(_kind.value)
for _limit in ("write", "read"):
    RATE_LIMIT_REJECTIONS.labels(_limit)
for _operation in ("write", "patch", "delete", "restore"):
    FILE_WRITES.labels(_operation)
EMBED_ONE, EMBED_MANY = "embed", "embed_batch"  # the memex service's operation names
for _operation in (EMBED_ONE, EMBED_MANY):
    EMBEDDING_DURATION.labels(_operation)


# The child series of each (metric, label values) asked for so far: labels() looks one up
# under a lock, with its label values checked, on every call; a request asks for four.
# Label values here are route templates, methods, statuses, functions and memory types:
# few, so the memo stays small.
_CHILDREN: dict[tuple[object, tuple[str, ...]], Any] = {}


def child(metric: Counter | Histogram, *values: str) -> Any:
    """`metric.labels(*values)`, memoized: the same child series, looked up once."""
    key = (metric, values)
    found = _CHILDREN.get(key)
    if found is None:
        found = _CHILDREN[key] = metric.labels(*values)
    return found


def embedding_operation(texts: int) -> str:
    """The operation label of a model call of `texts` texts."""
    return EMBED_ONE if texts == 1 else EMBED_MANY


# --- SQL calls ----------------------------------------------------------------------------

# The function a select calls: `select * from memex.search(`, `select memex.count(`.
_CALLED = re.compile(r"^\s*select\b(?:.*?\bfrom)?\s+(memex\.\w+)\s*\(", re.DOTALL)


@functools.lru_cache(maxsize=512)
def sql_function(sql: str) -> str | None:
    """The memex.* function a statement of a memexdb/<domain>/sql.py calls (None: none)."""
    found = _CALLED.search(sql)
    return found.group(1) if found else None


@contextlib.contextmanager
def sql_call(sql: str) -> Iterator[None]:
    """Time a statement into memex_sql_call_duration_seconds{function} (errors too)."""
    function = sql_function(sql)
    if function is None:
        yield
        return
    started = perf_counter()
    try:
        yield
    finally:
        child(SQL_DURATION, function).observe(perf_counter() - started)


# --- memories -----------------------------------------------------------------------------


def count_by_type(counter: Counter, rows: Iterable[Any]) -> None:
    """Add each row (anything with a `memory_type`) to `counter`{type}."""
    tally: dict[str, int] = {}
    for row in rows:
        kind = str(row.memory_type)
        tally[kind] = tally.get(kind, 0) + 1
    for kind, n in tally.items():
        child(counter, kind).inc(n)


def rate_limited(operation: str | None) -> None:
    """One 429: `store` limits writes, `search` reads (memex._enforce_rate_limit)."""
    RATE_LIMIT_REJECTIONS.labels("write" if operation == "store" else "read").inc()


# --- the pool ----------------------------------------------------------------------------


def observe_pool(stats: Mapping[str, int]) -> None:
    """Set memex_db_pool_connections from psycopg_pool's `get_stats()`."""
    size = stats.get("pool_size", 0)
    idle = stats.get("pool_available", 0)
    POOL_CONNECTIONS.labels("in_use").set(max(size - idle, 0))
    POOL_CONNECTIONS.labels("idle").set(idle)
    POOL_CONNECTIONS.labels("waiting").set(stats.get("requests_waiting", 0))


# --- scrape-time figures from the database -------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    """What memex.metrics_snapshot() read; `up` False when the database did not answer."""

    up: bool
    runs: Mapping[tuple[str, str], int] = field(default_factory=dict)
    embed_queue_depth: int = 0
    memories_condensed: int = 0
    ann_memories: int = 0
    ann_tenants: int = 0


class SnapshotCollector(Collector):
    """The database-derived gauges of one scrape."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    def collect(self) -> Iterable[Metric]:
        s = self.snapshot
        yield GaugeMetricFamily(
            "memex_up", "1 when the database answered the scrape-time queries", value=int(s.up)
        )
        if not s.up:
            return
        runs = GaugeMetricFamily(
            "memex_consolidation_runs",
            "Consolidation runs recorded in the database (pg_cron's too), by kind and status",
            labels=["kind", "status"],
        )
        for (kind, status), n in sorted(s.runs.items()):
            runs.add_metric([kind, status], n)
        yield runs
        yield GaugeMetricFamily(
            "memex_consolidation_memories_condensed",
            "Memories condensed into summaries by the condense runs recorded as done",
            value=s.memories_condensed,
        )
        yield GaugeMetricFamily(
            "memex_embed_queue_depth",
            "Memories waiting in the embed queue",
            value=s.embed_queue_depth,
        )
        yield GaugeMetricFamily(
            "memex_ann_index_memories",
            "Memories of the tenants ranked through the ANN (HNSW) index",
            value=s.ann_memories,
        )
        yield GaugeMetricFamily(
            "memex_ann_index_tenants",
            "Tenants ranked through the ANN (HNSW) index",
            value=s.ann_tenants,
        )


# --- exposition --------------------------------------------------------------------------


def multiprocess_dir() -> str | None:
    """The multiprocess directory this process writes to (None: single process)."""
    return os.environ.get(MULTIPROC_ENV) or None


def new_multiprocess_dir() -> str:
    """A fresh, private directory for the workers of one `memexdb serve` start (values of
    an earlier start must not be added to this one's)."""
    return tempfile.mkdtemp(prefix="memexdb-metrics-")


def remove_multiprocess_dir(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def mark_dead_workers(path: str) -> list[int]:
    """Forget the live-gauge files of processes that are gone (a worker killed without
    its shutdown, replaced by uvicorn): their pool is no longer the service's. Their
    counters stay, so the service's totals never go down."""
    dead = []
    for name in glob.glob(os.path.join(path, "gauge_live*_*.db")):
        pid = int(name.rsplit("_", 1)[1].removesuffix(".db"))
        if pid != os.getpid() and not _alive(pid):
            multiprocess.mark_process_dead(pid, path)  # type: ignore[no-untyped-call]
            dead.append(pid)
    return dead


def mark_this_process_dead() -> None:
    """At a worker's shutdown: its pool leaves the service's gauges."""
    path = multiprocess_dir()
    if path is not None:
        multiprocess.mark_process_dead(os.getpid(), path)  # type: ignore[no-untyped-call]


def exposition(snapshot: Snapshot) -> bytes:
    """The text exposition of this process's (or, in multiprocess mode, every worker's)
    metrics plus the database's figures in `snapshot`."""
    path = multiprocess_dir()
    registry = CollectorRegistry(auto_describe=False)
    # process_* (CPU, memory, open files) of the process answering the scrape: the memex
    # service's dashboards read them
    ProcessCollector(registry=registry)
    if path is None:
        registry.register(_ProcessMetrics())
    else:
        mark_dead_workers(path)
        multiprocess.MultiProcessCollector(registry, path)  # type: ignore[no-untyped-call]
    registry.register(SnapshotCollector(snapshot))
    return prometheus_client.generate_latest(registry)


def service_metrics() -> list[Metric]:
    """The memex_* metrics as a scrape adds them up (every worker's in multiprocess
    mode), without the database's figures: what the console's overview samples."""
    path = multiprocess_dir()
    registry = CollectorRegistry(auto_describe=False)
    if path is None:
        registry.register(_ProcessMetrics())
    else:
        multiprocess.MultiProcessCollector(registry, path)  # type: ignore[no-untyped-call]
    return list(registry.collect())


class _ProcessMetrics(Collector):
    """The memex_* metrics of the default registry (single process), without the client
    library's own process and platform collectors."""

    def collect(self) -> Iterable[Metric]:
        for metric in prometheus_client.REGISTRY.collect():
            if metric.name.startswith("memex_"):
                yield metric
