"""The Starlette application: request parsing, one AsyncMemex call, response shaping.

Each operation is declared once in ENDPOINTS (memexdb.rest.endpoint): the routes and the
OpenAPI document (memexdb.rest.docs) are both built from that table, and bodies and
answers are the domains' models (memexdb.<domain>.models).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from memexdb import console
from memexdb.client import AsyncMemex
from memexdb.console.history import SAMPLE_INTERVAL_S, History
from memexdb.error_models import ErrorResponse
from memexdb.export_format import IMPORT_LINES_MAX, LINE_MAX_BYTES, ImportResponse
from memexdb.memories.models import ExportedMemory, ExportQuery
from memexdb.operation_table import OPERATIONS
from memexdb.rest import docs, health, importing, operation_routes
from memexdb.rest.endpoint import Endpoint, Reply
from memexdb.rest.errors import HANDLERS, CatchAll, OpenAIErrors
from memexdb.rest.parsing import memex_of, query_of
from memexdb.rest.routing import with_slash_router

log = logging.getLogger("memexdb.rest")


async def export_memories(request: Request) -> Response:
    query = query_of(request, ExportQuery)
    records = aiter(memex_of(request).export(**query.model_dump()))
    # The first page is read before the answer starts, so that its errors are JSON answers.
    first = await anext(records, None)

    async def lines() -> AsyncIterator[str]:
        if first is None:
            return
        yield json.dumps(first, ensure_ascii=False) + "\n"
        async for record in records:
            yield json.dumps(record, ensure_ascii=False) + "\n"

    return StreamingResponse(lines(), media_type="application/x-ndjson")


ENDPOINTS = (
    *operation_routes.endpoints(OPERATIONS),
    Endpoint(
        "GET",
        "/v1/export",
        export_memories,
        "Export an agent's (or one user's) whole memory as JSON Lines",
        Reply(
            200,
            "A header line, then one record per line: the memories (files too, archived"
            " ones with their lineage, oldest first per user), then the file revisions, the"
            " access log and the consolidation runs (`memexdb import` and POST /v1/import"
            " read it back; docs/operations.md#export-and-import)",
            ExportedMemory,
            media_type="application/x-ndjson",
        ),
        query=ExportQuery,
        operation_id="export",
        tag="memories",
    ),
    Endpoint(
        "POST",
        "/v1/import",
        importing.import_records,
        "Import an export (JSON Lines) as it was: memories, files, their history",
        Reply(200, "What was imported and skipped, per kind of record", ImportResponse),
        errors=(
            Reply(
                413,
                f"A line longer than {LINE_MAX_BYTES} bytes, or more than {IMPORT_LINES_MAX} lines",
                ErrorResponse,
            ),
            Reply(415, "The body is not application/x-ndjson", ErrorResponse),
        ),
        stream=(importing.MEDIA_TYPES[0], importing.EXAMPLE),
        operation_id="import_memories",
        tag="memories",
    ),
    *health.ENDPOINTS,
)


def _route(path: str, endpoints: list[Endpoint]) -> Route:
    # One route per path, so that a 405 names every method of the path in its Allow header.
    handlers = {e.method: e.handler for e in endpoints}
    if "GET" in handlers:
        handlers.setdefault("HEAD", handlers["GET"])

    async def dispatch(request: Request) -> Response:
        return await handlers[request.method](request)

    return Route(path, dispatch, methods=list(handlers))


def routes() -> list[BaseRoute]:
    by_path: dict[str, list[Endpoint]] = {}
    for e in ENDPOINTS:
        by_path.setdefault(e.path, []).append(e)
    return [
        *(_route(path, endpoints) for path, endpoints in by_path.items()),
        *docs.routes(ENDPOINTS),
        # the admin console (HTML pages, not in the OpenAPI document): memexdb.console
        *console.routes(),
    ]


def create_app(
    connect: Callable[[], contextlib.AbstractAsyncContextManager[AsyncMemex]],
    *,
    metrics_token: str | None = None,
    metrics_history_seconds: float = SAMPLE_INTERVAL_S,
    import_lines_max: int = IMPORT_LINES_MAX,
) -> Starlette:
    """The REST app. `connect()` opens the AsyncMemex the app uses for its lifespan
    (memexdb.service passes the process's runtime, which also runs the scheduled jobs).
    `metrics_token`: a bearer token that may read GET /metrics besides admin keys;
    `metrics_history_seconds`: how often the console's overview samples the metrics;
    `import_lines_max`: the most lines a POST /v1/import body may have."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        app.state.scrapes = health.ScrapeAccess(metrics_token)
        app.state.import_lines_max = import_lines_max
        app.state.history = History(health.embed_queue_depth, interval=metrics_history_seconds)
        async with connect() as memex, app.state.history.sampling(memex):
            app.state.memex = memex
            yield

    app = Starlette(
        routes=routes(),
        # OpenAIErrors outside CatchAll: a 500 of POST /v1/embeddings is OpenAI's shape too
        middleware=[Middleware(OpenAIErrors), Middleware(CatchAll)],
        exception_handlers=dict(HANDLERS),
    )
    # a trailing slash is redirected for GET and HEAD only (memexdb.rest.routing)
    return with_slash_router(app, lifespan)
