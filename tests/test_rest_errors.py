"""The REST app's last line of defence: an exception no handler takes is a JSON 500,
logged once, and the keep-alive connection survives (in-process, over ASGI)."""

from __future__ import annotations

import logging

import httpx
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from memexdb.rest.errors import HANDLERS, CatchAll


async def broken(request: Request) -> Response:
    raise RuntimeError("a bug")


async def fine(request: Request) -> Response:
    return Response("ok")


async def test_unexpected_error_is_a_json_500_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = Starlette(
        routes=[Route("/broken", broken), Route("/fine", fine)],
        middleware=[Middleware(CatchAll)],
        exception_handlers=dict(HANDLERS),
    )
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=True)
    with caplog.at_level(logging.ERROR):
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            r = await http.get("/broken")
            assert r.status_code == 500
            assert r.json()["error"] == {
                "code": "internal_error",
                "message": "internal server error",
                "fields": [],
                "retry_after_seconds": None,
            }
            assert "a bug" not in r.text
            assert (await http.get("/fine")).status_code == 200
    errors = [rec for rec in caplog.records if rec.levelno >= logging.ERROR]
    assert len(errors) == 1 and "unhandled error on GET /broken" in errors[0].getMessage()
