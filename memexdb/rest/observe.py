"""Every HTTP request of the service, observed once: its request id (X-Request-Id, taken
from the client when it is sane, else made here, and echoed in the answer), the metrics
memex_http_requests_total and memex_http_request_duration_seconds by route template, in
json log mode one access-log line, and (`worker`) X-Memex-Worker: the pid of the worker
process that answered.

The route is the template the router matched (`/v1/memories/{memory_id}`, never a raw
path: ids would make a series per memory), `other` when none did. The access log names
the route, method, status and latency, never bodies, query strings or search text, so
no memory content reaches the logs.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import uuid
from time import perf_counter

from starlette.routing import Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memexdb import metrics

access_log = logging.getLogger("memexdb.access")

REQUEST_ID_HEADER = b"x-request-id"
WORKER_HEADER = b"x-memex-worker"
# A client's id is kept when it is short and plain (it is logged and echoed as is).
_SANE_ID = re.compile(rb"[A-Za-z0-9._:@/+=-]{1,128}")
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_CONVERTOR = re.compile(r"\{(\w+):\w+\}")
OTHER = "other"


def route_of(scope: Scope) -> str:
    """The template of the route that served `scope` (OpenAPI spelling), or `other`."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if not isinstance(path, str) or (isinstance(route, Mount) and not path):
        return OTHER  # nothing matched, or only the catch-all mount of the REST app
    return _template(path, isinstance(route, Mount))


@functools.lru_cache(maxsize=1024)  # a route's path: as many as the app has routes
def _template(path: str, mount: bool) -> str:
    return _CONVERTOR.sub(r"{\1}", path + "/" if mount else path)


def request_id_of(scope: Scope) -> str:
    for name, value in scope["headers"]:
        if name == REQUEST_ID_HEADER and _SANE_ID.fullmatch(value):
            return str(value.decode())
    return uuid.uuid4().hex


class Observe:
    """ASGI middleware, outermost in the service. `worker`: add X-Memex-Worker (here
    rather than in a layer of its own: one `send` wrapper less per request)."""

    def __init__(self, app: ASGIApp, *, json_log: bool = False, worker: bool = False) -> None:
        self.app = app
        self.json_log = json_log
        # the worker's header before the request id, as when it had its own layer
        self._worker = [(WORKER_HEADER, str(os.getpid()).encode())] if worker else []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = request_id_of(scope)
        scope.setdefault("state", {})["request_id"] = request_id
        status = 500  # an app that fails before it answers: what the server will send

        async def answer(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = [h for h in message.get("headers", []) if h[0] != REQUEST_ID_HEADER]
                headers += self._worker
                headers.append((REQUEST_ID_HEADER, request_id.encode()))
                message = {**message, "headers": headers}
            await send(message)

        started = perf_counter()
        try:
            await self.app(scope, receive, answer)
        finally:
            elapsed = perf_counter() - started
            route = route_of(scope)
            method = scope["method"] if scope["method"] in _METHODS else OTHER
            metrics.child(metrics.HTTP_REQUESTS, route, method, str(status)).inc()
            metrics.child(metrics.HTTP_DURATION, route, method).observe(elapsed)
            if self.json_log:
                client = scope.get("client")
                access_log.info(
                    "%s %s %s",
                    method,
                    route,
                    status,
                    extra={
                        "request_id": request_id,
                        "method": method,
                        "route": route,
                        "status": status,
                        "duration_ms": round(elapsed * 1000, 3),
                        "client": client[0] if client else None,
                    },
                )
