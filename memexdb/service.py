"""The service application: REST and the MCP endpoints mounted next to it, built from
the environment so that every uvicorn worker process builds the same app."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.routing import Mount

from memexdb import heap, logs, metrics
from memexdb.client import AsyncMemex
from memexdb.config import Settings
from memexdb.errors import SetupError
from memexdb.mcp import build_mcp_server
from memexdb.mcp.http import (
    McpTransports,
    rest_security_for,
    transport_security_for,
)
from memexdb.rest import create_app
from memexdb.rest.cors import Cors
from memexdb.rest.errors import OpenAIErrors, on_http_error
from memexdb.rest.host_guard import RestHostGuard
from memexdb.rest.observe import Observe
from memexdb.rest.routing import with_slash_router
from memexdb.runtime import Runtime


def app_from_env() -> Starlette:
    """uvicorn factory: needs MEMEX_DATABASE_URL (`memexdb serve` sets it for its
    workers after starting the embedded server and migrating)."""
    settings = Settings.from_env()
    dsn = settings.database_url
    if not dsn:
        raise SetupError("MEMEX_DATABASE_URL is not set; start the service with `memexdb serve`")
    # Worker processes start unconfigured (without this the MCP SDK would install its own
    # root handler and format): they log at MEMEX_LOG_LEVEL in MEMEX_LOG_FORMAT, which
    # `memexdb serve` exports to them.
    logs.configure(settings.log_level, settings.log_format)

    @contextlib.asynccontextmanager
    async def runtime() -> AsyncIterator[AsyncMemex]:
        # This worker's client, database watch and job runner (jobs: one worker runs them)
        async with Runtime.open(settings, dsn) as opened:
            yield opened.memex

    rest = create_app(
        runtime,
        metrics_token=settings.metrics_token,
        metrics_history_seconds=settings.metrics_history_seconds,
    )

    def memex() -> AsyncMemex:
        # Opened by the REST lifespan: MCP and REST share one pool and one embedder.
        client: AsyncMemex = rest.state.memex
        return client

    security = transport_security_for(settings)
    mcp = McpTransports(build_mcp_server(memex), security, settings.mcp_relay_dir)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            async with rest.router.lifespan_context(rest), mcp.lifespan():
                # started: what startup made lives as long as the worker (memexdb.heap)
                with heap.settled():
                    yield
        finally:
            metrics.mark_this_process_dead()  # its pool leaves the service's gauges

    app = Starlette(
        # The host guard first (Host, then Origin: MEMEX_ALLOWED_ORIGINS plus
        # MEMEX_CORS_ORIGINS), then CORS for the listed origins (memexdb.rest.cors).
        routes=[
            *mcp.routes,
            Mount(
                "",
                # OpenAI's error fields on the host and origin refusals of /v1/embeddings too
                app=OpenAIErrors(
                    RestHostGuard(
                        Cors(rest, settings.cors_origin_list), rest_security_for(settings, security)
                    )
                ),
            ),
        ],
        # Observe is outermost: every request is counted and logged, refusals included,
        # and its answer names the worker process (X-Memex-Worker).
        middleware=[Middleware(Observe, json_log=settings.log_format == "json", worker=True)],
        # A path no route takes (Mount("") does not match a path holding a newline, e.g.
        # a path parameter's %0A): the REST API's JSON 404, not Starlette's text.
        exception_handlers={HTTPException: on_http_error},
    )
    # no redirect across a trailing slash but for GET and HEAD (memexdb.rest.routing)
    return with_slash_router(app, lifespan)
