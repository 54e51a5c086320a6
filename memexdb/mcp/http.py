"""The MCP HTTP transports inside the service: streamable HTTP at /mcp (stateless, so
any worker answers any request) and legacy SSE at /sse + /messages/, both behind a
Host/Origin check against DNS rebinding."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
import re
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from uuid import UUID

from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memexdb.bearer import bearer_key
from memexdb.config import Settings
from memexdb.errors import Forbidden, MemexError, Unauthenticated
from memexdb.mcp.relay import SseMessageRelay
from memexdb.mcp.server import MemexMCP
from memexdb.rest.errors import memex_error_response
from memexdb.rest.host_guard import HostGuard

log = logging.getLogger("memexdb.mcp")

STREAMABLE_PATH = "/mcp"
SSE_PATH = "/sse"
SSE_MESSAGE_PATH = "/messages/"
# The session id in the SDK's `endpoint` event (/messages/?session_id=<32 hex digits>).
_SESSION_ID = re.compile(rb"session_id=([0-9a-f]{32})")

_LOCAL_HOSTS = ("127.0.0.1", "localhost", "[::1]")
_WILDCARD_HOSTS = ("0.0.0.0", "::", "")  # noqa: S104 (names of listen addresses, not binds)


def _split(raw: str | None) -> list[str] | None:
    """A comma-separated list of hosts or origins, in lower case (they are compared with
    the lowered Host and Origin headers: see memexdb.rest.host_guard.lowercase_host)."""
    if raw is None or not raw.strip():
        return None
    return [item.strip().lower() for item in raw.split(",") if item.strip()]


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
    listen = _bracketed(host.lower())
    if host not in _WILDCARD_HOSTS and listen not in names:
        names.append(listen)
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


def rest_security_for(
    settings: Settings, security: TransportSecuritySettings
) -> TransportSecuritySettings:
    """The REST API's Host and Origin checks: the MCP endpoints' (`security`), whose
    allowed origins also hold MEMEX_CORS_ORIGINS: an origin listed for CORS need not be
    repeated in MEMEX_ALLOWED_ORIGINS (the MCP endpoints, which answer no preflight, do
    not take it)."""
    extra = [o for o in settings.cors_origin_list if o not in (security.allowed_origins or [])]
    if not extra or not security.enable_dns_rebinding_protection:
        return security
    return security.model_copy(
        update={"allowed_origins": [*(security.allowed_origins or []), *extra]}
    )


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
        streamable = HostGuard(
            _KeyRequired(_PostOnly(StreamableHTTPASGIApp(self._manager)), server), security
        )
        sse = server.sse_app(
            sse_path=SSE_PATH, message_path=SSE_MESSAGE_PATH, transport_security=security
        )
        sse_routes: list[BaseRoute] = []
        self._relay: SseMessageRelay | None = None
        owners = SseOwners()
        for route in sse.routes:
            if isinstance(route, Mount):  # the message endpoint
                # (the owner check runs in the worker that holds the session, relayed or not)
                self._relay = SseMessageRelay(
                    _SessionOwnerOnly(route.app, owners, server), relay_dir
                )
                route = Mount(route.path, app=HostGuard(self._relay, security))
            elif isinstance(route, Route):  # the event stream
                opened = _AuthenticatedStream(_OneResponse(route.app), server, owners)
                route = Route(route.path, HostGuard(opened, security), methods=["GET"])
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


class _KeyRequired:
    """POST /mcp: the caller's credentials are checked as every call checks them before
    the SDK reads any JSON-RPC, so that a missing or invalid key (on a service that has
    keys) is an HTTP 401 with `WWW-Authenticate: Bearer` (the MCP authorization spec's
    signal to ask for credentials), not a tool error inside a 200. An open loopback
    service without keys lets every request through, as before; a database that cannot
    answer now lets it through too (the tools then report the outage as they always did)."""

    def __init__(self, app: ASGIApp, server: MemexMCP) -> None:
        self.app = app
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.server.authenticate is not None:
            try:
                await self.server.authenticate(Request(scope).headers)
            except Unauthenticated as exc:
                await memex_error_response(exc)(scope, receive, send)
                return
            except MemexError:  # the database cannot say now: each tool call reports it
                pass
        await self.app(scope, receive, send)


def _fingerprint(headers: Mapping[str, str]) -> bytes:
    """Who a request's credentials name, to compare: a digest of its bearer key (b"" for
    none); Unauthenticated for a malformed Authorization header."""
    key = bearer_key(headers)
    return hashlib.sha256(key.encode()).digest() if key is not None else b""


async def _checked_caller(server: MemexMCP, headers: Mapping[str, str]) -> bytes:
    """The fingerprint of a request's credentials, checked as every call checks them
    (MemexError when refused)."""
    caller = _fingerprint(headers)
    if server.authenticate is not None:
        await server.authenticate(headers)
    return caller


class SseOwners:
    """The credentials that opened each SSE session held by this worker: a session
    belongs to the key that opened its stream."""

    def __init__(self) -> None:
        self.by_session: dict[str, bytes] = {}


class _AuthenticatedStream:
    """GET /sse: the caller's credentials are checked as every call checks them (a 401
    without a valid key where one is needed) before a stream opens, and the session the
    SDK then announces (its `endpoint` event) is recorded as that key's."""

    def __init__(self, app: ASGIApp, server: MemexMCP, owners: SseOwners) -> None:
        self.app = app
        self.server = server
        self.owners = owners

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            owner = await _checked_caller(self.server, request.headers)
        except MemexError as exc:
            await memex_error_response(exc)(scope, receive, send)
            return
        sessions: list[str] = []

        async def recording(message: Message) -> None:
            if not sessions and message["type"] == "http.response.body":
                found = _SESSION_ID.search(message.get("body", b""))
                if found:  # before the client can read it and post to the session
                    sessions.append(found.group(1).decode())
                    self.owners.by_session[sessions[0]] = owner
            await send(message)

        try:
            await self.app(scope, receive, recording)
        finally:
            for session in sessions:
                self.owners.by_session.pop(session, None)


def _session_of(request: Request) -> str:
    """The session a message names, as the SDK reads it (any spelling of a UUID)."""
    try:
        return UUID(hex=request.query_params.get("session_id", "")).hex
    except ValueError:
        return ""  # the SDK answers 400


class _SessionOwnerOnly:
    """POST /messages/: a message to a session of this worker is let through only with
    the credentials that opened its stream, and only while they are valid: the key is
    checked first, as every call checks it (401 without a valid key: missing, unknown or
    revoked), then the owner (403 with another valid key); nothing is answered into the
    stream otherwise. A session this worker does not hold goes to the SDK (404: the relay
    then asks the other workers, which check it themselves)."""

    def __init__(self, app: ASGIApp, owners: SseOwners, server: MemexMCP) -> None:
        self.app = app
        self.owners = owners
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            request = Request(scope, receive)
            owner = self.owners.by_session.get(_session_of(request))
            if owner is not None:
                try:
                    caller = await _checked_caller(self.server, request.headers)
                except MemexError as exc:
                    await memex_error_response(exc)(scope, receive, send)
                    return
                if not hmac.compare_digest(caller, owner):
                    refused: MemexError = (
                        Forbidden("this SSE session belongs to the API key that opened it")
                        if caller
                        else Unauthenticated(
                            "this SSE session was opened with an API key: send the same key"
                        )
                    )
                    await memex_error_response(refused)(scope, receive, send)
                    return
        await self.app(scope, receive, send)
