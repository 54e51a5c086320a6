"""DNS-rebinding protection for the REST API: a web page that points its own host name at
127.0.0.1 must not reach the memories of a service on the visitor's machine. The rules and
settings are the MCP endpoints' (MEMEX_ALLOWED_HOSTS / MEMEX_ALLOWED_ORIGINS); refusals
are the REST API's typed JSON errors."""

from __future__ import annotations

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
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


def _open(scope: Scope) -> bool:
    path = scope["path"]
    if path == SCRAPE_PATH:
        return any(name == b"authorization" for name, _ in scope["headers"])
    return path in OPEN_PATHS


class RestHostGuard:
    """Answer 421 `host_not_allowed` to a foreign Host and 403 `origin_not_allowed` to a
    foreign browser Origin, before the request reaches a route."""

    def __init__(self, app: ASGIApp, security: TransportSecuritySettings) -> None:
        self.app = app
        self._check = TransportSecurityMiddleware(security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope = lowercase_host(scope)
        if scope["type"] == "http" and not _open(scope):
            request = Request(scope, receive)
            refused = await self._check.validate_request(request, is_post=False)
            if refused is not None:
                if refused.status_code == 421:
                    host = request.headers.get("host", "")
                    response = error_response(
                        421,
                        "host_not_allowed",
                        f"Host {host!r} is not allowed; add it to MEMEX_ALLOWED_HOSTS",
                    )
                else:
                    origin = request.headers.get("origin", "")
                    response = error_response(
                        403,
                        "origin_not_allowed",
                        f"Origin {origin!r} is not allowed; add it to MEMEX_ALLOWED_ORIGINS",
                    )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
