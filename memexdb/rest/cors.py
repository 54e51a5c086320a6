"""CORS for browser applications (MEMEX_CORS_ORIGINS): a page of a listed origin may call
the REST API with its key in the Authorization header; other origins get no CORS header
at all, so the browser keeps the answer from their pages.

- Only listed origins, each echoed in Access-Control-Allow-Origin (never `*`), with
  `Vary: Origin`.
- No Access-Control-Allow-Credentials: the API's credential is the Authorization header,
  which the page sets itself (allowed by the preflight); the admin console's cookie is
  never sent on a page's behalf, and the console, /docs and /metrics have no CORS.
- A preflight (OPTIONS with Access-Control-Request-Method) of a listed origin is answered
  with the methods and headers the API uses and a max-age; of another origin, 403
  `origin_not_allowed` without any CORS header.

The host guard (memexdb.rest.host_guard) runs first: a listed origin also passes its
Origin check (memexdb.mcp.http.transport_security_for adds them to the REST API's allowed
origins), an origin neither setting lists is refused there (403 origin_not_allowed).
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from memexdb.rest.endpoint import MIN_LSN_HEADER, WRITE_LSN_HEADER
from memexdb.rest.errors import error_response
from memexdb.rest.observe import REQUEST_ID_HEADER

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
HEADERS = ("Authorization", "Content-Type", "X-Request-Id", MIN_LSN_HEADER)
# what a client may read of an answer besides the CORS-safelisted headers (retries honour
# Retry-After; the request id is what a person quotes; the session token is what the
# client sends back as Memex-Min-LSN)
EXPOSED = ("Retry-After", REQUEST_ID_HEADER.decode(), WRITE_LSN_HEADER)
MAX_AGE = 600  # seconds a browser may reuse a preflight's answer
# The API: its operations, health and its document; not the console, /docs or /metrics.
PREFIXES = ("/v1/", "/health", "/openapi.json")


def _api(path: str) -> bool:
    return path.startswith(PREFIXES)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


class Cors:
    """CORS for `origins` on the REST API's paths of `app` (no origins: `app` as it is)."""

    def __init__(self, app: ASGIApp, origins: Sequence[str]) -> None:
        self.app = app
        self.origins = tuple(origins)
        self._cors = CORSMiddleware(
            app,
            allow_origins=list(self.origins),
            allow_methods=list(METHODS),
            allow_headers=list(HEADERS),
            allow_credentials=False,
            expose_headers=list(EXPOSED),
            max_age=MAX_AGE,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.origins and scope["type"] == "http" and _api(scope["path"]):
            origin = _header(scope, b"origin")
            preflight = (
                scope["method"] == "OPTIONS"
                and origin is not None
                and _header(scope, b"access-control-request-method") is not None
            )
            if preflight and origin not in self.origins:
                # Starlette's answer would still name the allowed methods and headers
                refused = error_response(
                    403,
                    "origin_not_allowed",
                    f"Origin {origin!r} may not call this API from a web page; add it to"
                    " MEMEX_CORS_ORIGINS",
                )
                await refused(scope, receive, send)
                return
            await self._cors(scope, receive, send)
        else:
            await self.app(scope, receive, send)
