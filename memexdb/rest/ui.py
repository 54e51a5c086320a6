"""Interactive API docs at `/docs`: Swagger UI 5 (it renders OpenAPI 3.1, which Swagger UI
4 cannot) from the PyPI package `openapi-ui-bundles`, served by this service itself, so a
browser fetches nothing from anywhere else."""

from __future__ import annotations

from openapi_ui_bundles.swagger_ui import static_path
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

STATIC = "/docs/static"

# validatorUrl null: Swagger UI would otherwise send the document to an online validator.
_PAGE = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>memexdb API</title>
<link rel="stylesheet" href="{STATIC}/swagger-ui.css">
<link rel="icon" type="image/png" href="{STATIC}/favicon-32x32.png">
</head><body><div id="swagger-ui"></div>
<script src="{STATIC}/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({{
  url: "/openapi.json", dom_id: "#swagger-ui", deepLinking: true, validatorUrl: null
}});</script>
</body></html>"""


async def page(request: Request) -> Response:
    return HTMLResponse(_PAGE)


def routes() -> list[BaseRoute]:
    return [
        Route("/docs", page, methods=["GET"]),
        Mount(STATIC, app=StaticFiles(directory=static_path), name="docs-static"),
    ]
