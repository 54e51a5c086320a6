"""The health routes (the `operations` tag of the REST API): health, liveness, readiness
and Prometheus metrics.

`GET /health/live` answers while the process serves requests; `GET /health/ready` only
while it should get traffic (the database answers, no migration runs, the schema is this
release's or newer); `GET /metrics` is memexdb.metrics' exposition, protected like the
admin API (an admin key for every agent, or MEMEX_METRICS_TOKEN) once the database has
keys, open on loopback while it has none.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import logging
import os

from starlette.requests import Request
from starlette.responses import Response

from memexdb import __version__, metrics
from memexdb.bearer import bearer_key
from memexdb.client import AsyncMemex
from memexdb.errors import Busy, DatabaseUnavailable, MemexError
from memexdb.health.models import BlockedLock, HealthResponse, LiveResponse, NotReady, ReadyResponse
from memexdb.migrations import older_revisions
from memexdb.rest.endpoint import Endpoint, Handler, Reply
from memexdb.rest.parsing import json_of

log = logging.getLogger("memexdb.rest")

# A probe or a scrape must answer fast whatever the database does.
READY_TIMEOUT_S = 2.0
AUTHORIZE_TIMEOUT_S = 2.0
SNAPSHOT_TIMEOUT_S = 1.5
# Every Prometheus server reads this version of the text format.
METRICS_MEDIA_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _memex(request: Request) -> AsyncMemex:
    memex: AsyncMemex = request.app.state.memex
    return memex


async def live(request: Request) -> Response:
    return json_of(LiveResponse(status="ok", version=__version__, pid=os.getpid()))


_older_revisions = functools.cache(older_revisions)


async def _not_ready(
    memex: AsyncMemex,
) -> tuple[tuple[NotReady, str] | None, list[BlockedLock]]:
    """Why this process should get no traffic now (code, message; None: it should), and
    who waits for a lock on a memex table now."""
    pool = getattr(memex.pool, "availability", None)
    if pool is not None and pool.down:
        return ("database_unavailable", "the database is down or being restarted"), []
    try:
        async with asyncio.timeout(READY_TIMEOUT_S):
            state = await memex.schema_state()
            try:
                blocked = await memex.lock_waits()
            except MemexError:  # a schema older than memex.lock_waits
                blocked = []
    except (DatabaseUnavailable, TimeoutError):
        return ("database_unavailable", "the database did not answer"), []
    if state.migrating:
        return ("migrating", "a migration of the schema is running"), blocked
    if state.revision is None or state.revision in _older_revisions():
        behind = f"the schema is at {state.revision}: run `memexdb migrate`"
        return ("schema_behind", behind), blocked
    return None, blocked


async def ready(request: Request) -> Response:
    problem, blocked = await _not_ready(_memex(request))
    if problem is None:
        return json_of(ReadyResponse(status="ok", version=__version__, blocked=blocked))
    reason, message = problem
    refused = ReadyResponse(
        status="unavailable", reason=reason, message=message, version=__version__, blocked=blocked
    )
    return json_of(refused, 503)


class ScrapeAccess:
    """Who may read /metrics: MEMEX_METRICS_TOKEN (checked here, so scrapes answer while
    the database is down), or a caller SQL gives admin access to every agent (an operator
    admin key, or nobody's key on a loopback service whose database has no keys).

    While the database is down SQL cannot decide: a scrape without a key is then let in
    if, when the database last answered, this process's scrapes needed none (metrics
    hold counts and latencies, never memory content); one with a key needs the token."""

    def __init__(self, token: str | None) -> None:
        self.token = token.encode() if token else None
        self.open_when_last_seen = False

    async def check(self, request: Request) -> None:
        """Return if the request may scrape; else raise Unauthenticated, Forbidden or
        DatabaseUnavailable (answered as the REST API's typed errors)."""
        key = bearer_key(request.headers)
        if key is not None and self.token and hmac.compare_digest(key.encode(), self.token):
            return
        try:
            async with asyncio.timeout(AUTHORIZE_TIMEOUT_S):
                await _memex(request).with_key(key).authorize(None, None, "admin")
        except (DatabaseUnavailable, TimeoutError):
            if key is None and self.open_when_last_seen:
                return
            raise DatabaseUnavailable("database is unavailable") from None
        except Exception:
            if key is None:
                self.open_when_last_seen = False
            raise
        self.open_when_last_seen = key is None


async def snapshot(memex: AsyncMemex) -> metrics.Snapshot:
    """The database's figures (memex.metrics_snapshot), or up=False if it does not answer
    within SNAPSHOT_TIMEOUT_S."""
    try:
        async with asyncio.timeout(SNAPSHOT_TIMEOUT_S):
            rows = await memex.as_operator("metrics").metrics_snapshot()
    except Exception:  # whatever it is, the scrape answers: memex_up 0 says so
        log.debug("metrics snapshot failed", exc_info=True)
        return metrics.Snapshot(up=False)
    figures = {row.metric: row.value for row in rows if row.kind is None}
    return metrics.Snapshot(
        up=True,
        runs={(r.kind, r.status or ""): r.value for r in rows if r.kind is not None},
        embed_queue_depth=figures.get("embed_queue_depth", 0),
        memories_condensed=figures.get("memories_condensed", 0),
        ann_memories=figures.get("ann_index_memories", 0),
        ann_tenants=figures.get("ann_index_tenants", 0),
    )


async def embed_queue_depth(memex: AsyncMemex) -> int | None:
    """The embed queue depth as a scrape reads it; None when the database does not answer
    (the console's overview samples it: memexdb.console.history)."""
    figures = await snapshot(memex)
    return figures.embed_queue_depth if figures.up else None


async def scrape(request: Request) -> Response:
    scrapes: ScrapeAccess = request.app.state.scrapes
    await scrapes.check(request)
    memex = _memex(request)
    figures = await snapshot(memex)
    metrics.observe_pool(memex.pool.get_stats())
    return Response(metrics.exposition(figures), media_type=METRICS_MEDIA_TYPE)


async def health(request: Request) -> Response:
    try:
        async with asyncio.timeout(2.0):
            await request.app.state.memex.ping()
    except (DatabaseUnavailable, Busy, TimeoutError) as exc:
        if _saturated(request.app.state.memex, exc):
            # the database answers, but every connection of the pool is taken
            return json_of(HealthResponse(status="busy", db="busy", version=__version__), 503)
        return json_of(
            HealthResponse(status="unavailable", db="unreachable", version=__version__), 503
        )
    return json_of(HealthResponse(status="ok", db="ok", version=__version__))


def _saturated(memex: AsyncMemex, exc: BaseException) -> bool:
    """Whether a ping that failed with `exc` only waited for a busy pool: no outage is
    known and no connection of the pool was free."""
    if isinstance(exc, DatabaseUnavailable):
        return False
    availability = getattr(memex.pool, "availability", None)
    if availability is not None and availability.down:
        return False
    if isinstance(exc, Busy):
        return True
    stats = memex.pool.get_stats()
    return stats.get("pool_available", 0) == 0 and stats.get("pool_size", 0) >= stats.get(
        "pool_max", 1
    )


def _probe(path: str, handler: Handler, summary: str, ok: Reply, *errors: Reply) -> Endpoint:
    """A probe: GET, open to everyone (no key, and none of the common errors), named by
    its path (/health/ready: health_ready)."""
    return Endpoint(
        "GET",
        path,
        handler,
        summary,
        ok,
        errors=errors,
        open=True,
        operation_id=path.strip("/").replace("/", "_"),
        tag="operations",
    )


ENDPOINTS = (
    _probe(
        "/health",
        health,
        "200 when the database answers, 503 otherwise",
        Reply(200, "Healthy", HealthResponse),
        Reply(503, "Database unreachable", HealthResponse),
    ),
    _probe(
        "/health/live",
        live,
        "Liveness: 200 while the process serves requests (the database is not asked)",
        Reply(200, "Alive", LiveResponse),
    ),
    _probe(
        "/health/ready",
        ready,
        "Readiness: 200 when the database answers, no migration runs and the schema is"
        " current; 503 with the reason otherwise",
        Reply(200, "Ready", ReadyResponse),
        Reply(503, "Not ready; `reason` says why", ReadyResponse),
    ),
    Endpoint(
        "GET",
        "/metrics",
        scrape,
        "Prometheus metrics of the service (every worker's); an admin key for every agent"
        " or MEMEX_METRICS_TOKEN once the database has keys",
        Reply(200, "The Prometheus text format (version 0.0.4)", media_type="text/plain"),
        operation_id="metrics",
        tag="operations",
    ),
)
