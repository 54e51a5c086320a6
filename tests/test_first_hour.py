"""What a new user met in the first hour (issue 25, section 5), each answered as a typed
error that says what is wrong: a memory id that is no UUID, a line range backwards, an
expiry in the past, a file read as of before it existed, and the in-process client's 401
naming the Python remedy. The REST app runs in-process on the real database and model."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import psycopg
import pytest

from memexdb import AsyncMemex
from memexdb.embedding import BatchingEmbedder
from memexdb.errors import InvalidArgument, NotFound, Unauthenticated
from memexdb.rest.app import create_app

WHO = {"agent_id": "A", "user_id": "u"}


@pytest.fixture
async def http(dsn: str, batching_embedder: BatchingEmbedder) -> AsyncIterator[httpx.AsyncClient]:
    @contextlib.asynccontextmanager
    async def connect() -> AsyncIterator[AsyncMemex]:
        memex = await AsyncMemex.connect(dsn, embedder=batching_embedder, remedy=None)
        async with memex:
            yield memex

    app = create_app(connect)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://localhost"
        ) as client,
    ):
        yield client


async def test_a_memory_id_that_is_not_a_uuid_is_a_404_saying_so(http: httpx.AsyncClient) -> None:
    for method in ("GET", "DELETE", "PATCH"):
        r = await http.request(method, "/v1/memories/123", params=WHO)
        assert r.status_code == 404, r.text
        error = r.json()["error"]
        assert error["code"] == "not_found"
        assert "memory_id must be a UUID" in error["message"], error
    r = await http.get("/v1/no-such-thing")  # any other unknown path: the plain 404
    assert r.status_code == 404 and "UUID" not in r.text


async def test_a_backwards_line_range_is_a_422(http: httpx.AsyncClient, amemex: AsyncMemex) -> None:
    await amemex.write_file("A", "u", "user/notes.md", "one\ntwo\nthree\nfour\nfive\nsix\n")
    query = {**WHO, "path": "user/notes.md", "from_line": "5", "to_line": "2"}
    r = await http.get("/v1/files/read", params=query)
    assert r.status_code == 422, r.text
    (field,) = r.json()["error"]["fields"]
    assert field["field"] == "to_line" and "at least from_line (5)" in field["message"]
    with pytest.raises(InvalidArgument, match="at least from_line"):
        await amemex.read_file("A", "u", "user/notes.md", from_line=5, to_line=2)
    r = await http.get("/v1/files/read", params={**query, "to_line": "5"})
    assert r.status_code == 200 and r.json()["content"] == "five", r.text


async def test_an_expiry_in_the_past_is_a_422(http: httpx.AsyncClient, amemex: AsyncMemex) -> None:
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    r = await http.post("/v1/memories", json={**WHO, "content": "x", "expires_at": past})
    assert r.status_code == 422, r.text
    (field,) = r.json()["error"]["fields"]
    assert field == {"field": "expires_at", "message": "must be in the future"}
    with pytest.raises(InvalidArgument, match="must be in the future") as refused:
        await amemex.store("A", "u", "x", expires_at=datetime.now(UTC) - timedelta(days=1))
    assert refused.value.field == "expires_at"
    stored = await amemex.store("A", "u", "kept")
    with pytest.raises(InvalidArgument, match="must be in the future"):
        await amemex.update("A", "u", stored.id, expires_at=datetime(2000, 1, 1, tzinfo=UTC))
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    r = await http.post("/v1/memories", json={**WHO, "content": "y", "expires_at": future})
    assert r.status_code == 201, r.text


async def test_a_file_read_as_of_before_it_existed_says_so(
    http: httpx.AsyncClient, amemex: AsyncMemex
) -> None:
    before = datetime.now(UTC) - timedelta(hours=1)
    await amemex.write_file("A", "u", "user/plan.md", "step one\n")
    r = await http.get(
        "/v1/files/read", params={**WHO, "path": "user/plan.md", "as_of": before.isoformat()}
    )
    assert r.status_code == 404, r.text
    assert "did not exist yet" in r.json()["error"]["message"], r.text
    with pytest.raises(NotFound, match="did not exist yet"):
        await amemex.read_file("A", "u", "user/plan.md", as_of=before)
    r = await http.get(
        "/v1/files/read", params={**WHO, "path": "user/never.md", "as_of": before.isoformat()}
    )
    assert r.status_code == 404 and "did not exist" not in r.text


async def test_the_in_process_client_names_the_python_remedy(
    dsn: str, batching_embedder: BatchingEmbedder, http: httpx.AsyncClient
) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("select memex.create_key('admin')")
    async with await AsyncMemex.connect(dsn, embedder=batching_embedder) as memex:
        with pytest.raises(Unauthenticated) as refused:
            await memex.count("A", "u")
    message = str(refused.value)
    assert "key=" in message and "as_operator" in message, message
    assert "Authorization" not in message, message
    r = await http.get("/v1/memories/count", params=WHO)  # over HTTP: the header
    assert r.status_code == 401
    assert "Authorization: Bearer" in r.json()["error"]["message"], r.text
