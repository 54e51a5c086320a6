"""The MCP HTTP transports inside the service: streamable HTTP at /mcp (stateless, so
any worker answers any request) and legacy SSE at /sse + /messages/, both behind a
Host/Origin check against DNS rebinding."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path

from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memexdb.config import Settings
from memexdb.mcp.relay import SseMessageRelay
from memexdb.mcp.server import MemexMCP

log = logging.getLogger("memexdb.mcp")

STREAMABLE_PATH = "/mcp"
SSE_PATH = "/sse"
SSE_MESSAGE_PATH = "/messages/"
WORKER_HEADER = b"x-memex-worker"

_LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]")
_WILDCARD_HOSTS = ("0.0.0.0", "::", "")  # noqa: S104 (names of listen addresses, not binds)


def _split(raw: str | None) -> list[str] | None:
    if raw is None or not raw.strip():
        return None
    return [item.strip() for item in raw.split(",") if item.strip()]


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def transport_security(
    host: str, allowed_hosts: str | None = None, allowed_origins: str | None = None
) -> TransportSecuritySettings:
    """DNS-rebinding protection for the MCP endpoints: requests must name an allowed Host
    (and, when a browser sends one, an allowed Origin). Defaults: the loopback names and
    the configured listen host, any port. `*` as the only entry turns the check off (for
    a deployment behind a proxy that checks Host itself)."""
    hosts = _split(allowed_hosts)
    origins = _split(allowed_origins)
    if hosts == ["*"]:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = list(_LOCAL_HOSTS)
    if host not in _WILDCARD_HOSTS and _bracketed(host) not in names:
        names.append(_bracketed(host))
    if hosts is None:
        hosts = [pattern for name in names for pattern in (name, f"{name}:*")]
    else:  # origins default to the allowed hosts
        names = list(dict.fromkeys(h.removesuffix(":*") for h in hosts))
    if origins is None:
        origins = [
            pattern
            for name in names
            for scheme in ("http", "https")
            for pattern in (f"{scheme}://{name}", f"{scheme}://{name}:*")
        ]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def transport_security_for(settings: Settings) -> TransportSecuritySettings:
    """`transport_security` with the service's MEMEX_ALLOWED_HOSTS / MEMEX_ALLOWED_ORIGINS
    (they guard the REST API too)."""
    host = settings.host
    security = transport_security(host, settings.allowed_hosts, settings.allowed_origins)
    if host in _WILDCARD_HOSTS and settings.allowed_hosts is None:
        log.warning(
            "listening on %s, but only Host headers naming this machine's loopback are "
            "accepted; set MEMEX_ALLOWED_HOSTS (e.g. myhost:*) for remote clients",
            host or "all interfaces",
        )
    return security


class McpTransports:
    """Routes and lifespan of the MCP HTTP transports for one MCP server."""

    def __init__(
        self,
        server: MemexMCP,
        security: TransportSecuritySettings,
        relay_dir: Path | None = None,
    ) -> None:
        # Stateless + JSON responses: every POST is answered on its own, by whichever
        # worker receives it, with no session to find (no sticky sessions needed).
        server.streamable_http_app(
            streamable_http_path=STREAMABLE_PATH,
            stateless_http=True,
            json_response=True,
            transport_security=security,
        )
        self._manager = server.session_manager
        streamable = _HostGuard(_PostOnly(StreamableHTTPASGIApp(self._manager)), security)
        sse = server.sse_app(
            sse_path=SSE_PATH, message_path=SSE_MESSAGE_PATH, transport_security=security
        )
        sse_routes: list[BaseRoute] = []
        self._relay: SseMessageRelay | None = None
        for route in sse.routes:
            if isinstance(route, Mount):  # the message endpoint
                self._relay = SseMessageRelay(route.app, relay_dir)
                route = Mount(route.path, app=_HostGuard(self._relay, security))
            elif isinstance(route, Route):  # the event stream
                stream = _HostGuard(_OneResponse(route.app), security)
                route = Route(route.path, stream, methods=["GET"])
            sse_routes.append(route)
        # Route, not Mount: /mcp and /mcp/ are both answered directly (a redirect from
        # /mcp to /mcp/ would lose the body of a POST in some clients).
        self.routes: list[BaseRoute] = [
            Route(STREAMABLE_PATH, streamable),
            Route(STREAMABLE_PATH + "/", streamable),
            *sse_routes,
        ]

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Run the streamable HTTP session manager (and the SSE relay) while serving."""
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(self._manager.run())
            if self._relay is not None:
                await stack.enter_async_context(self._relay.run())
            yield


class _PostOnly:
    """Stateless streamable HTTP has no stream to GET (nothing could ever be sent on it,
    but it would hold a connection and a worker's attention forever): answer 405, as the
    spec allows, instead of the SDK's endless empty stream."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            body = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {
                    "code": -32600,
                    "message": "Method Not Allowed: stateless server, POST only",
                },
            }
            await JSONResponse(body, status_code=405, headers={"Allow": "POST"})(
                scope, receive, send
            )
            return
        await self.app(scope, receive, send)


class _OneResponse:
    """The SDK's SSE endpoint answers again (an empty Response) after its event stream
    ends; when the server ended the stream (shutdown) that second answer makes uvicorn
    log an error. Drop whatever comes after a complete response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        done = False

        async def send_once(message: Message) -> None:
            nonlocal done
            if done:
                return
            if message["type"] == "http.response.body" and not message.get("more_body"):
                done = True
            await send(message)

        await self.app(scope, receive, send_once)


class _HostGuard:
    """Refuse a foreign Host or Origin (421 / 403) before the SDK transports see the
    request (they check too, but the SSE endpoint would answer and then raise)."""

    def __init__(self, app: ASGIApp, security: TransportSecuritySettings) -> None:
        self.app = app
        self._check = TransportSecurityMiddleware(security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refused = await self._check.validate_request(Request(scope, receive), is_post=False)
            if refused is not None:
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)


class WorkerHeader:
    """Add `X-Memex-Worker: <pid>` to every response: which worker process answered."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._value = str(os.getpid()).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_header(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (WORKER_HEADER, self._value)]
            await send(message)

        await self.app(scope, receive, send_with_header)
