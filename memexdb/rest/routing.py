"""The service's router: a trailing-slash mismatch is redirected for reads only.

Starlette's Router answers a path that differs from a route's by a trailing slash with a
307 to that route, for every method: `DELETE /v1/memories/?agent_id=a&user_id=ivy` (a
memory id left empty) was redirected to `DELETE /v1/memories?...`, another operation, and
every client that follows redirects ran it. Here only GET and HEAD are redirected, and
only to a route that answers that method there; any other request on a path no route
takes is a 404 (a path a route takes with another method: a 405), each with the service's
JSON error, never a redirect.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette._utils import get_route_path
from starlette.applications import Starlette
from starlette.datastructures import URL
from starlette.exceptions import HTTPException
from starlette.responses import RedirectResponse
from starlette.routing import BaseRoute, Match, Router
from starlette.types import Lifespan, Receive, Scope, Send

# Methods whose request is safe to send again somewhere else (RFC 9110, 9.2.1), minus those
# nobody follows a redirect with.
REDIRECTED_METHODS = frozenset({"GET", "HEAD"})


class SlashRouter(Router):
    """A Router (redirect_slashes off) whose fallback redirects GET and HEAD, and only
    them, across a trailing slash to a route that takes the same method there."""

    def __init__(self, routes: Sequence[BaseRoute], lifespan: Lifespan[Any] | None) -> None:
        super().__init__(routes, redirect_slashes=False, lifespan=lifespan)

    async def not_found(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = get_route_path(scope)
            if path != "/":
                other = dict(scope)
                other["path"] = (
                    scope["path"].rstrip("/") if path.endswith("/") else scope["path"] + "/"
                )
                matches = [route.matches(other)[0] for route in self.routes]
                if scope["method"] in REDIRECTED_METHODS and Match.FULL in matches:
                    await RedirectResponse(url=str(URL(scope=other)))(scope, receive, send)
                    return
                if any(m is not Match.NONE for m in matches) and "app" in scope:
                    raise HTTPException(
                        404,
                        f"no such route: {scope['method']} {scope['path']} (an empty id, or"
                        " a trailing slash: paths have none, and only GET and HEAD are"
                        " redirected)",
                    )
        await super().not_found(scope, receive, send)


def with_slash_router(app: Starlette, lifespan: Lifespan[Any] | None = None) -> Starlette:
    """`app` with its routes served by a SlashRouter (and `lifespan`, the one it was
    given: Starlette hands both to the Router it makes, which this one replaces)."""
    app.router = SlashRouter(app.router.routes, lifespan)
    return app
