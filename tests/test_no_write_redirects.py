"""No request deletes more than it names (issue 33, item 1): a wrong path for a write is a
404 or 405 with the service's JSON error, never a redirect to another operation.

`DELETE /v1/memories/?agent_id=a&user_id=ivy` (a memory id left empty) used to answer 307
to `DELETE /v1/memories?...`, which erased the user: every client that follows redirects
deleted all of ivy's memories. These tests walk every route of the real service (its
routing table: REST, console, docs, MCP) with every method, against a real uvicorn
process on a real database.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import httpx
import pytest
from starlette.routing import BaseRoute, Mount, Route

from memexdb.embedded import EmbeddedPostgres
from memexdb.rest.app import routes as rest_routes
from memexdb.service import app_from_env
from tests.live_service import service_on_new_database

METHODS = ("POST", "PUT", "PATCH", "DELETE", "OPTIONS")  # GET and HEAD may be redirected
TENANT = {"agent_id": "a", "user_id": "ivy"}
ANY_ID = "7f0c0b5e-3d3c-4f55-9a53-2b1c8f7d9e01"
_PARAM = re.compile(r"\{(\w+)(?::(\w+))?\}")
# Apps mounted whole, that answer every path under them themselves (the MCP SDK's SSE
# message endpoint, static files): what they answer is theirs, but never a redirect.
MOUNTED = ("/messages/", "/admin/static/", "/docs/static/")


@pytest.fixture(scope="module")
def service(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[str]:
    with service_on_new_database(pg_server, "redirects") as running:
        yield running.base_url


def _paths(route: BaseRoute) -> list[str]:
    """A route's path format (a Mount: a path under it)."""
    if isinstance(route, Route):
        return [route.path]  # with its convertors: {memory_id:uuid}
    if isinstance(route, Mount) and route.path:
        return [route.path + "/x"]
    return []


def route_formats(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """Every path format the service routes: its own routes (MCP) and the REST app's
    (operations, export/import, health, metrics, docs, console)."""
    monkeypatch.setenv("MEMEX_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")
    service_app = app_from_env()  # (its lifespan does not run: nothing connects)
    formats = {p for r in service_app.routes for p in _paths(r)}
    formats |= {p for r in rest_routes() for p in _paths(r)}
    return formats


def variants(path_format: str) -> set[str]:
    """The path with its parameters filled in, with and without a trailing slash, and
    with each parameter left empty (an empty segment: `/v1/memories/`)."""

    def fill(match: re.Match[str]) -> str:
        return ANY_ID if match.group(2) == "uuid" else "x"

    full = _PARAM.sub(fill, path_format)
    found = {full, full.rstrip("/") or "/", full.rstrip("/") + "/"}
    for i in range(len(_PARAM.findall(path_format))):
        count = iter(range(1000))
        found.add(
            _PARAM.sub(lambda m: "" if next(count) == i else fill(m), path_format)  # noqa: B023
        )
    return found


def test_the_walk_covers_every_route(monkeypatch: pytest.MonkeyPatch) -> None:
    formats = route_formats(monkeypatch)
    for expected in (
        "/v1/memories",
        "/v1/memories/{memory_id:uuid}",
        "/v1/users/erase",
        "/v1/admin/keys/{key}",
        "/mcp",
        "/admin/keys",
        "/docs",
    ):
        assert expected in formats, sorted(formats)
    assert "/v1/memories/" in variants("/v1/memories/{memory_id:uuid}")


def test_no_write_is_ever_redirected(service: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every route x {as routed, with and without a trailing slash, each id left empty}
    x every method but GET and HEAD: never a 307/308 (which repeat the method elsewhere),
    and on a path no route takes, a JSON 404/405. (The console's forms answer 303 See
    Other on their own paths: the browser then GETs the page.)"""
    formats = route_formats(monkeypatch)
    exact = {_PARAM.sub(lambda m: ANY_ID if m.group(2) == "uuid" else "x", f) for f in formats}
    wrong: list[str] = []
    with httpx.Client(base_url=service, timeout=30, follow_redirects=False) as http:
        for path_format in sorted(formats):
            for path in sorted(variants(path_format)):
                for method in METHODS:
                    r = http.request(method, path, params=TENANT)
                    seen = f"{method} {path} -> {r.status_code} {r.headers.get('location')}"
                    if r.is_redirect and not (r.status_code == 303 and path in exact):
                        wrong.append(seen)
                    elif path not in exact and not _json_refusal(path, r):
                        wrong.append(f"{seen} ({r.headers.get('content-type')})")
    assert not wrong, "\n".join(wrong)


def _json_refusal(path: str, r: httpx.Response) -> bool:
    """Whether a path no route takes as such got the service's JSON 404/405 (the console's
    own pages: its HTML one; a mounted app's paths: whatever it answers)."""
    if path.startswith(MOUNTED):
        return True
    content_type = r.headers.get("content-type", "")
    return r.status_code in (404, 405) and content_type.startswith(
        ("application/json", "text/html")
    )


def test_reads_are_still_redirected_across_a_trailing_slash(service: str) -> None:
    with httpx.Client(base_url=service, timeout=30, follow_redirects=False) as http:
        for method in ("GET", "HEAD"):
            r = http.request(method, "/v1/memories/count/", params=TENANT)
            assert r.status_code == 307, r.text
            assert httpx.URL(r.headers["location"]).path == "/v1/memories/count"
        # not to a path that takes no GET: a 404, no redirect
        r = http.get("/v1/users/erase/")
        assert r.status_code == 404, r.text


def test_an_empty_memory_id_deletes_nothing(service: str) -> None:
    """The issue's reproduction: with a client that follows redirects, the DELETE of an
    empty memory id used to erase the user (2 memories -> 0)."""
    tenant = {"agent_id": f"a-{uuid.uuid4().hex[:8]}", "user_id": "ivy"}
    with httpx.Client(base_url=service, timeout=60, follow_redirects=True) as http:
        for content in ("Ivy likes tea.", "Ivy lives in Oslo."):
            assert http.post("/v1/memories", json={**tenant, "content": content}).status_code == 201
        r = http.delete("/v1/memories/", params=tenant)
        assert r.status_code == 404, r.text
        assert r.json()["error"]["code"] == "not_found"
        assert not r.history  # no redirect was followed
        r = http.delete("/v1/memories", params=tenant)  # the old erase: now a 405
        assert r.status_code == 405, r.text
        assert "POST /v1/users/erase" in r.json()["error"]["message"]
        count = http.get("/v1/memories/count", params=tenant)
        assert count.json()["count"] == 2, count.text
