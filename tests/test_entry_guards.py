"""What every entry point checks before it does any work (issue 21, "smaller holes"), on the
service's app in process (a uvicorn process for MCP's network clients and legacy SSE
streams) whose database has keys: credentials before input (a 401, not a 422 naming
fields), JSON in a query string bounded like a body's, console pages for admin keys only,
legacy SSE sessions owned by the key that opened them, 404s that name what was not found,
and no memory stored already expired."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import httpx2
import psycopg
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from starlette.routing import Route

from memexdb import AsyncMemex
from memexdb.console.pages import routes as console_routes
from memexdb.console.web import CSRF_COOKIE, KEY_COOKIE
from memexdb.embedded import EmbeddedPostgres
from memexdb.errors import InvalidArgument
from memexdb.fields import METADATA_MAX_DEPTH
from memexdb.rest.app import ENDPOINTS
from tests.conftest import drop_database, new_database, scratch_dir
from tests.live_service import (
    Service,
    Through,
    free_port,
    in_process_service,
    service_env,
    uvicorn_args,
)
from tests.test_mcp_support import call, call_error, connected

ANY_ID = "7f0c0b5e-3d3c-4f55-9a53-2b1c8f7d9e01"
# a well-formed key nobody has
NO_SUCH_KEY = "mxk_000000000000_" + "0" * 64
SECRET = "The vault code of alice is 4711."


@dataclass
class Keyed:
    dsn: str
    url: str
    operator: str  # admin of every agent
    admin_a: str  # admin of agent A
    writer_a: str
    reader_a: str
    writer_b: str
    app: httpx.Client | None = None  # the app in this process (its TestClient), or None


def _key(dsn: str, access: str, agent_id: str | None = None) -> str:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "select token from memex.create_key(p_access => %s, p_agent_id => %s)",
            (access, agent_id),
        ).fetchone()
    assert row is not None
    return str(row[0])


def _world(dsn: str, url: str, app: httpx.Client | None = None) -> Keyed:
    """The keys of every test, and alice's secret stored by A's writer."""
    world = Keyed(
        dsn,
        url,
        operator=_key(dsn, "admin"),
        admin_a=_key(dsn, "admin", "A"),
        writer_a=_key(dsn, "write", "A"),
        reader_a=_key(dsn, "read", "A"),
        writer_b=_key(dsn, "write", "B"),
        app=app,
    )
    with _http(world, world.writer_a) as http:
        memory = {"agent_id": "A", "user_id": "alice", "content": SECRET}
        assert http.post("/v1/memories", json=memory).status_code == 201
    return world


@pytest.fixture(scope="module")
def keyed(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[Keyed]:
    """The service's app in this process (tests.live_service.in_process_service): what
    the REST API and the console answer."""
    dsn = new_database(pg_server)
    try:
        with in_process_service(dsn) as app:
            yield _world(dsn, str(app.base_url).rstrip("/"), app)
    finally:
        drop_database(pg_server, dsn)


@pytest.fixture(scope="module")
def served(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[Keyed]:
    """A uvicorn process: for the MCP SDK's network clients and legacy SSE streams (e2e)."""
    dsn = new_database(pg_server)
    log = scratch_dir("memexdb-guards-") / "service.log"
    port = free_port()
    running = Service(uvicorn_args(port), service_env(MEMEX_DATABASE_URL=dsn), port, log)
    try:
        running.wait_healthy()
        yield _world(dsn, running.base_url)
        assert "Traceback" not in running.output(), running.output()[-4000:]
    finally:
        running.close()
        drop_database(pg_server, dsn)
        shutil.rmtree(log.parent, ignore_errors=True)


def _auth(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def _http(keyed: Keyed, token: str | None = None, **options: Any) -> httpx.Client:
    transport = None if keyed.app is None else Through(keyed.app)
    return httpx.Client(
        base_url=keyed.url, headers=_auth(token), timeout=60, transport=transport, **options
    )


def _error(r: httpx.Response, status: int) -> dict[str, Any]:
    assert r.status_code == status, (r.request.method, r.request.url, r.status_code, r.text[:600])
    body: dict[str, Any] = r.json()["error"]
    return body


def _nested_text(levels: int) -> str:
    """A metadata object nested `levels` deep (arrays inside: short in a URL)."""
    return '{"k":' + "[" * (levels - 1) + "1" + "]" * (levels - 1) + "}"


# --- JSON in a query string: the body's nesting bound ----------------------------------


@pytest.mark.parametrize("levels", [METADATA_MAX_DEPTH + 2, 900, 1000, 5000, 8000])
@pytest.mark.parametrize("path", ["/v1/memories", "/v1/memories/count"])
def test_deep_metadata_in_a_query_string_is_a_422(keyed: Keyed, path: str, levels: int) -> None:
    """Before: 1,000 levels or more were a 500 (RecursionError in json.loads)."""
    params = {"agent_id": "A", "user_id": "alice", "metadata": _nested_text(levels)}
    with _http(keyed, keyed.writer_a) as http:
        error = _error(http.get(path, params=params), 422)
        assert error["code"] == "invalid_argument"
        assert error["fields"] == [
            {
                "field": "metadata",
                "message": f"must not nest deeper than {METADATA_MAX_DEPTH} levels",
            }
        ]
        # no key: the credentials are checked first
        with _http(keyed) as anonymous:
            _error(anonymous.get(path, params=params), 401)
        # within the bound the filter works
        shallow = {**params, "metadata": _nested_text(METADATA_MAX_DEPTH)}
        assert http.get(path, params=shallow).status_code == 200


def test_deep_metadata_in_the_console_is_a_422_page(keyed: Keyed) -> None:
    params = {"agent_id": "A", "user_id": "alice", "metadata": _nested_text(1000)}
    with _http(keyed, cookies={KEY_COOKIE: keyed.operator}) as http:
        r = http.get("/admin/memories", params=params)
    assert r.status_code == 422, r.text[:500]
    assert "nest deeper than" in r.text


def test_query_strings_holding_json_are_only_the_metadata_filters() -> None:
    """Every query model's JSON fields are bounded by the same validator (MetadataQuery):
    a new one must be added here, and to the test above."""
    holding = {
        f"{e.method} {e.path}": sorted(getattr(e.query, "json_fields", ()))
        for e in ENDPOINTS
        if e.query is not None and getattr(e.query, "json_fields", ())
    }
    assert holding == {
        "GET /v1/memories": ["metadata"],
        "GET /v1/memories/count": ["metadata"],
    }


# --- credentials first ------------------------------------------------------------------


def _concrete(path: str) -> str:
    values = {"memory_id": ANY_ID, "key": "0123456789ab", "run_id": "1", "user_id": "alice"}
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: values[m.group(1)], path)


GUARDED = [e for e in ENDPOINTS if not e.open]


@pytest.mark.parametrize("endpoint", GUARDED, ids=[f"{e.method} {e.path}" for e in GUARDED])
def test_bad_input_without_valid_credentials_is_a_401(keyed: Keyed, endpoint: Any) -> None:
    """Before: a 422 naming the bad fields, to anyone."""
    request: dict[str, Any] = {"params": {"bogus": "1"}}
    if endpoint.body is not None:
        request["content"] = b'{"not json'
        request["headers"] = {"content-type": "application/json"}
    path = _concrete(endpoint.path)
    for token in (None, NO_SUCH_KEY):
        with _http(keyed, token) as http:
            error = _error(http.request(endpoint.method, path, **request), 401)
            assert "fields" not in error or error["fields"] == []
    if endpoint.body is not None or endpoint.query is not None:
        with _http(keyed, keyed.operator) as http:
            assert _error(http.request(endpoint.method, path, **request), 422)["fields"]


def test_a_malformed_authorization_header_with_bad_input_is_a_401(keyed: Keyed) -> None:
    with _http(keyed) as http:
        r = http.post("/v1/memories", json={}, headers={"Authorization": "Basic eA=="})
        assert "Bearer" in _error(r, 401)["message"]


def test_404s_name_what_was_not_found(keyed: Keyed) -> None:
    with _http(keyed, keyed.operator) as http:
        error = _error(http.delete("/v1/admin/keys/0123456789ab"), 404)
        assert error["message"] == "key not found"
        error = _error(http.post("/v1/admin/dream/runs/987654321/restore"), 404)
        assert error["message"] == "run not found"
        error = _error(
            http.get(f"/v1/memories/{ANY_ID}", params={"agent_id": "A", "user_id": "x"}), 404
        )
        assert error["message"] == "memory not found for this agent_id and user_id"


@contextlib.asynccontextmanager
async def _mcp_http(keyed: Keyed, token: str | None) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers=_auth(token), timeout=120) as http:
        transport = streamable_http_client(f"{keyed.url}/mcp", http_client=http)
        async with connected(Client(transport, mode="legacy", read_timeout_seconds=120)) as c:
            yield c


async def test_mcp_bad_arguments_without_a_key_are_not_authenticated(served: Keyed) -> None:
    bad = {"agent_id": "A", "user_id": "alice", "content": "x", "importance": 7}
    call_ = {"name": "store_memory", "arguments": bad}
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call_}
    accept = {"accept": "application/json, text/event-stream"}
    with _http(served) as http:  # refused over HTTP before the arguments are read
        r = http.post("/mcp", json=message, headers=accept)
        assert _error(r, 401)["code"] == "unauthenticated" and "importance" not in r.text
    async with _mcp_http(served, served.writer_a) as writer:
        message = await call_error(writer, "store_memory", **bad)
        assert "invalid arguments" in message and "importance" in message, message


# --- the admin console: admin keys only, on every page ----------------------------------


def _console_paths() -> list[str]:
    paths = []
    for route in console_routes():
        if not isinstance(route, Route) or route.path in (
            "/admin",
            "/admin/login",
            "/admin/logout",
        ):
            continue
        paths.append(route.path.replace("{rest:path}", "no/such/page"))
    return paths


TENANT = {"agent_id": "A", "user_id": "alice", "path": "user/p.md", "id": ANY_ID, "query": "vault"}


@pytest.mark.parametrize("who", ["writer_a", "reader_a", "writer_b"])
def test_every_console_page_refuses_a_key_that_is_not_an_admins(keyed: Keyed, who: str) -> None:
    """Before: the login refused such a key, but a cookie holding it was served pages."""
    token = getattr(keyed, who)
    paths = _console_paths()
    assert len(paths) >= 20, paths
    with _http(keyed) as http:
        csrf = http.get("/admin/login").cookies[CSRF_COOKIE]
    for path in paths:
        for method in ("GET", "POST"):
            cookies = {KEY_COOKIE: token, CSRF_COOKIE: csrf}
            with _http(keyed, cookies=cookies) as http:
                if method == "GET":
                    r = http.get(path, params=TENANT)
                else:
                    r = http.post(path, data={**TENANT, "csrf": csrf, "key": "x", "run_id": "1"})
            assert r.status_code == 403, (method, path, r.status_code, r.text[:300])
            assert "admin key" in r.text and SECRET not in r.text
            # the key is dropped from the cookie
            assert f'{KEY_COOKIE}="";' in r.headers["set-cookie"] or (
                f"{KEY_COOKIE}=;" in r.headers["set-cookie"]
            ), r.headers


def test_console_pages_still_serve_admin_keys(keyed: Keyed) -> None:
    for token in (keyed.operator, keyed.admin_a):
        with _http(keyed, cookies={KEY_COOKIE: token}) as http:
            r = http.get("/admin/memories", params={"agent_id": "A", "user_id": "alice"})
            assert r.status_code == 200 and SECRET in r.text, r.text[:500]
    with _http(keyed, cookies={KEY_COOKIE: keyed.admin_a}) as http:
        r = http.get("/admin/memories", params={"agent_id": "B", "user_id": "alice"})
        assert r.status_code == 403  # its own agent only, as before


# --- legacy SSE: a session belongs to the key that opened it ----------------------------


def test_sse_without_a_valid_key_is_a_401(keyed: Keyed) -> None:
    """Before: a stream opened without a key once keys existed."""
    for token in (None, NO_SUCH_KEY):
        with _http(keyed, token) as http, http.stream("GET", "/sse") as r:
            assert r.status_code == 401, r.status_code
            r.read()
            assert r.json()["error"]["code"] == "unauthenticated"
            assert r.headers["www-authenticate"].startswith("Bearer")


async def test_sse_official_client_needs_a_key_and_works_with_one(served: Keyed) -> None:
    with pytest.raises(Exception):  # noqa: B017 (the SDK raises its HTTP client's error)
        async with connected(Client(sse_client(f"{served.url}/sse"), mode="legacy")):
            pass
    who = {"agent_id": "A", "user_id": "sse"}
    transport = sse_client(f"{served.url}/sse", headers=_auth(served.writer_a))
    async with connected(Client(transport, mode="legacy", read_timeout_seconds=120)) as c:
        await call(c, "store_memory", **who, content="Prefers tea over coffee.")
        assert (await call(c, "count_memories", **who))["count"] == 1


async def test_sse_official_client_posting_with_another_key_is_refused(served: Keyed) -> None:
    """The stream is A's; the client's messages carry B's key: every one is refused."""
    refused: list[int] = []

    async def swap_key(request: httpx2.Request) -> None:
        if request.method == "POST":
            request.headers["Authorization"] = f"Bearer {served.writer_b}"

    async def record(response: httpx2.Response) -> None:
        if response.request.method == "POST":
            refused.append(response.status_code)

    def factory(
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        hooks = {"request": [swap_key], "response": [record]}
        return httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth, event_hooks=hooks)

    transport = sse_client(
        f"{served.url}/sse", headers=_auth(served.writer_a), httpx_client_factory=factory
    )
    with pytest.raises(Exception):  # noqa: B017 (initialize is never answered)
        async with connected(Client(transport, mode="legacy", read_timeout_seconds=5)):
            pass
    assert refused and set(refused) == {403}, refused


INITIALIZE = {
    "jsonrpc": "2.0",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}


def test_sse_messages_with_other_credentials_are_refused_and_never_answered(served: Keyed) -> None:
    """Before: A's message, authorised by A's key, was answered into a keyless stream."""
    with (
        _http(served) as http,
        http.stream("GET", "/sse", headers=_auth(served.writer_a)) as stream,
    ):
        assert stream.status_code == 200
        lines = stream.iter_lines()
        endpoint = next(line for line in lines if line.startswith("data: "))[6:]
        session = endpoint.rsplit("=", 1)[1]
        spellings = [endpoint, endpoint.replace(session, str(uuid.UUID(hex=session)).upper())]
        for url in spellings:
            for token, status in ((served.writer_b, 403), (served.admin_a, 403), (None, 401)):
                r = http.post(url, json={**INITIALIZE, "id": f"{token}"}, headers=_auth(token))
                assert r.status_code == status, (url, r.status_code, r.text)
            r = http.post(url, json={"bogus": 1}, headers={"Authorization": "Basic eA=="})
            assert r.status_code == 401
        r = http.post(endpoint, json={**INITIALIZE, "id": "from-A"}, headers=_auth(served.writer_a))
        assert r.status_code == 202, r.text
        # the first message of the stream answers A's: nothing was answered before it
        answer = json.loads(next(line for line in lines if line.startswith("data: "))[6:])
        assert answer["id"] == "from-A" and "result" in answer


def test_sse_message_with_a_revoked_key_is_a_401(served: Keyed) -> None:
    """The key is checked before the session's owner (issue 34, item 7). Before: a message
    with the opener's revoked key was let through, one with another revoked key got 403."""
    opener, other = _key(served.dsn, "write", "A"), _key(served.dsn, "write", "A")
    with _http(served) as http, http.stream("GET", "/sse", headers=_auth(opener)) as stream:
        assert stream.status_code == 200
        lines = stream.iter_lines()  # (kept: a dropped line iterator closes the stream)
        endpoint = next(line for line in lines if line.startswith("data: "))[6:]
        with psycopg.connect(served.dsn, autocommit=True) as conn:
            for token in (opener, other):
                conn.execute("select memex.revoke_key(%s)", (token.split("_")[1],))
        for token in (opener, other):
            r = http.post(endpoint, json={**INITIALIZE, "id": 1}, headers=_auth(token))
            assert _error(r, 401)["code"] == "unauthenticated", token
            assert r.headers["www-authenticate"].startswith("Bearer")


# --- an expiry in the past --------------------------------------------------------------

PAST = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
FUTURE = (datetime.now(UTC) + timedelta(days=1)).isoformat()


def test_rest_refuses_an_expiry_in_the_past(keyed: Keyed) -> None:
    """Before: 201, and the memory was never found."""
    who = {"agent_id": "A", "user_id": "expiry"}
    with _http(keyed, keyed.writer_a) as http:
        error = _error(
            http.post("/v1/memories", json={**who, "content": "x", "expires_at": PAST}), 422
        )
        assert error["fields"] == [{"field": "expires_at", "message": "must be in the future"}]
        items = [
            {**who, "content": "fine", "expires_at": FUTURE},
            {**who, "content": "expired", "expires_at": PAST},
        ]
        error = _error(http.post("/v1/memories/batch", json={"memories": items}), 422)
        assert error["fields"][0]["field"] == "memories[1].expires_at"
        assert http.get("/v1/memories/count", params=who).json()["count"] == 0  # nothing stored
        r = http.post("/v1/memories", json={**who, "content": "kept", "expires_at": FUTURE})
        assert r.status_code == 201
        memory_id = r.json()["id"]
        error = _error(
            http.patch(f"/v1/memories/{memory_id}", json={**who, "expires_at": PAST}), 422
        )
        assert error["fields"][0]["field"] == "expires_at"
        assert http.get("/v1/memories/count", params=who).json()["count"] == 1


async def test_python_refuses_an_expiry_in_the_past_but_an_import_keeps_it(
    amemex: AsyncMemex,
) -> None:
    past = datetime.now(UTC) - timedelta(seconds=1)
    with pytest.raises(InvalidArgument) as refused:
        await amemex.store("A", "py", "x", expires_at=past)
    assert refused.value.field == "expires_at"
    kept = await amemex.store("A", "py", "kept", expires_at=past + timedelta(days=1))
    with pytest.raises(InvalidArgument) as refused:
        await amemex.update("A", "py", kept.id, expires_at=past)
    assert refused.value.field == "expires_at"
    # An export restored later may hold memories that expired since: kept as they were
    # (invisible, purged by maintenance), not refused.
    header, *records = [
        r async for r in amemex.export("A", "py") if r["record"] != "memory_revision"
    ]
    assert header["record"] == "header" and len(records) == 1
    records[0].update(id=str(uuid.uuid4()), expires_at=past.isoformat())
    result = await amemex.import_memories(records)
    assert result.imported == 1
    assert await amemex.count("A", "py") == 1
