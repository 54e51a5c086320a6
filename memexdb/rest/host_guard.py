"""DNS-rebinding protection for the REST API: a web page that points its own host name at
127.0.0.1 must not reach the memories of a service on the visitor's machine. The rules and
settings are the MCP endpoints' (MEMEX_ALLOWED_HOSTS / MEMEX_ALLOWED_ORIGINS); refusals
are the REST API's typed JSON errors."""

from __future__ import annotations

import functools

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from memexdb.rest.errors import error_response

# Liveness and readiness probes (a container platform's, by pod IP) carry no tenant data.
OPEN_PATHS = frozenset({"/health", "/health/live", "/health/ready"})
# Prometheus scrapes by the service's name or IP. A scrape that sends a key (the metrics
# token, an admin key) is let past the Host check: a page that rebinds a name to
# 127.0.0.1 may send the header but knows no valid key, and /metrics refuses every
# invalid one (401), on a database without keys too. Without a key, /metrics is checked
# like the REST API.
SCRAPE_PATH = "/metrics"


def lowercase_host(scope: Scope) -> Scope:
    """The scope with its Host and Origin headers in lower case: host names (and an
    origin's scheme and host) are case-insensitive, and the allowed lists are kept in
    lower case, so that `LOCALHOST` is `localhost` for every check after this one (the
    SDK's transports check again with the same rules)."""
    headers = scope["headers"]
    if not any(name in (b"host", b"origin") and value != value.lower() for name, value in headers):
        return scope
    lowered = [
        (name, value.lower() if name in (b"host", b"origin") else value) for name, value in headers
    ]
    return {**scope, "headers": lowered}


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    for key, value in headers:
        if key == name:
            return value
    return None


@functools.lru_cache(maxsize=64)
def _patterns(allowed: tuple[str, ...]) -> tuple[frozenset[str], tuple[str, ...]]:
    """The SDK's allowed values as it reads them: exact ones, and for each `name:*` the
    prefix `name:` (any port)."""
    return frozenset(allowed), tuple(a[:-2] + ":" for a in allowed if a.endswith(":*"))


def _listed(value: str, allowed: list[str]) -> bool:
    exact, any_port = _patterns(tuple(allowed))
    return value in exact or value.startswith(any_port)


def plainly_allowed(scope: Scope, security: TransportSecuritySettings) -> bool:
    """Whether the SDK's check (TransportSecurityMiddleware.validate_request) lets `scope`
    pass, decided by its rules on the raw headers without the Request it reads them
    through: no rebinding protection, or a listed Host and no Origin or a listed one. A
    request it does not let pass is left to the SDK, which refuses it (and logs why)."""
    if not security.enable_dns_rebinding_protection:
        return True
    headers = scope["headers"]
    host = _header(headers, b"host")
    if not host or not _listed(host.decode("latin-1"), security.allowed_hosts):
        return False
    origin = _header(headers, b"origin")
    return not origin or _listed(origin.decode("latin-1"), security.allowed_origins)


def _open(scope: Scope) -> bool:
    path = scope["path"]
    if path == SCRAPE_PATH:
        return any(name == b"authorization" for name, _ in scope["headers"])
    return path in OPEN_PATHS


class HostGuard:
    """Refuse a foreign Host or Origin (their case folded first: lowercase_host) with the
    MCP SDK's rules before `app` sees the request: as the SDK answers (421 / 403), unless
    `refusal` says otherwise; `checks` says which requests are checked (all HTTP ones)."""

    def __init__(self, app: ASGIApp, security: TransportSecuritySettings) -> None:
        self.app = app
        self._check = TransportSecurityMiddleware(security)

    def checks(self, scope: Scope) -> bool:
        return True

    def refusal(self, request: Request, refused: Response) -> Response:
        return refused

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope = lowercase_host(scope)
            if self.checks(scope) and not plainly_allowed(scope, self._check.settings):
                request = Request(scope, receive)
                refused = await self._check.validate_request(request, is_post=False)
                if refused is not None:
                    await self.refusal(request, refused)(scope, receive, send)
                    return
        await self.app(scope, receive, send)


class RestHostGuard(HostGuard):
    """Answer 421 `host_not_allowed` to a foreign Host and 403 `origin_not_allowed` to a
    foreign browser Origin, before the request reaches a route."""

    def checks(self, scope: Scope) -> bool:
        return not _open(scope)

    def refusal(self, request: Request, refused: Response) -> Response:
        if refused.status_code == 421:
            host = request.headers.get("host", "")
            return error_response(
                421,
                "host_not_allowed",
                f"Host {host!r} is not allowed; add it to MEMEX_ALLOWED_HOSTS",
            )
        origin = request.headers.get("origin", "")
        return error_response(
            403,
            "origin_not_allowed",
            f"Origin {origin!r} is not allowed; add it to MEMEX_ALLOWED_ORIGINS",
        )
