"""The shortcuts of a request's path through the service (issue 39 item 1, session 9)
give what the longer ways gave: the host guard's check on raw headers lets through
exactly what the MCP SDK's check lets through, the API key read from raw headers is the
one read through Starlette's Headers, the memoized metric series are labels()' own, the
search answer validated in one call is the one validated hit by hit, and Observe adds
the worker's header where its own layer did."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import itertools
import os
import uuid
from typing import Any

import pytest
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import Response

from memexdb import metrics
from memexdb.bearer import bearer_key, raw_bearer_key
from memexdb.errors import Unauthenticated
from memexdb.mcp.http import transport_security
from memexdb.memories.models import MemorySearchRequest, SearchResponse, SearchResult
from memexdb.memories.operations import _searched
from memexdb.rest.host_guard import plainly_allowed
from memexdb.rest.observe import REQUEST_ID_HEADER, WORKER_HEADER, Observe
from memexdb.types import SearchHit

SETTINGS = [
    transport_security("127.0.0.1"),
    transport_security("0.0.0.0", "mem.example.com:*,mem", "https://app.example.com"),
    transport_security("127.0.0.1", "*"),
    TransportSecuritySettings(allowed_hosts=["a:*", "a"], allowed_origins=["http://a:*"]),
]
HOSTS = [None, "", "127.0.0.1", "127.0.0.1:8000", "127.0.0.1:", "localhost:1:2", "[::1]:80"]
HOSTS += ["mem", "mem:80", "mem.example.com:443", "mem.example.com", "evil.example", "a:9"]
ORIGINS = [None, "", "http://127.0.0.1:8000", "https://localhost", "http://evil.example"]
ORIGINS += ["https://app.example.com", "https://app.example.com:1", "http://a:3", "http://a"]


def _scope(headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    return {"type": "http", "method": "GET", "path": "/v1/memories", "headers": headers}


def _sdk_allows(scope: dict[str, Any], security: TransportSecuritySettings) -> bool:
    check = TransportSecurityMiddleware(security)
    refused = asyncio.run(check.validate_request(Request(scope), is_post=False))
    return refused is None


def test_the_plain_host_check_lets_through_what_the_sdk_does() -> None:
    for security, host, origin in itertools.product(SETTINGS, HOSTS, ORIGINS):
        headers = [(b"accept", b"*/*")]
        if host is not None:
            headers.append((b"host", host.encode()))
        if origin is not None:
            headers.append((b"origin", origin.encode()))
        scope = _scope(headers)
        assert plainly_allowed(scope, security) == _sdk_allows(scope, security), (host, origin)


def test_the_key_read_from_raw_headers_is_the_one_read_through_headers() -> None:
    cases: list[list[tuple[bytes, bytes]]] = [
        [],
        [(b"host", b"x")],
        [(b"authorization", b"Bearer k1")],
        [(b"Authorization", b"bearer  k2 ")],
        [(b"authorization", b"Bearer k3"), (b"authorization", b"Bearer k4")],
        [(b"authorization", b"Basic abc")],
        [(b"authorization", b"Bearer ")],
        [(b"authorization", "Bearer k\u00e9".encode("latin-1"))],
    ]
    for raw in cases:
        try:
            expected: str | type[Exception] | None = bearer_key(Request(_scope(raw)).headers)
        except Unauthenticated:
            expected = Unauthenticated
        if expected is Unauthenticated:
            with pytest.raises(Unauthenticated):
                raw_bearer_key(raw)
        else:
            assert raw_bearer_key(raw) == expected, raw


def test_a_memoized_series_is_the_labels_one() -> None:
    first = metrics.child(metrics.HTTP_REQUESTS, "/test/path", "GET", "200")
    assert first is metrics.HTTP_REQUESTS.labels("/test/path", "GET", "200")
    assert metrics.child(metrics.HTTP_REQUESTS, "/test/path", "GET", "200") is first
    assert metrics.child(metrics.HTTP_DURATION, "/test/path", "GET") is not first


def _hit(n: int) -> SearchHit:
    now = datetime.datetime(2026, 12, 7, tzinfo=datetime.UTC)
    values: dict[str, Any] = {
        "id": uuid.UUID(int=n),
        "agent_id": "a",
        "user_id": "u",
        "memory_type": "episodic",
        "content": f"memory {n}",
        "importance": 1.0,
        "metadata": {"n": n, "nested": {"x": [1, 2.5, None]}},
        "embedding_model": "m",
        "created_at": now,
        "source_ids": [],
        "supersedes": [],
        "similarity": 0.5 if n % 2 else None,
        "text_rank": None if n % 2 else 0.25,
        "relevance": 0.4,
        "recency": 0.9,
        "score": 1.0 / (n + 1),
    }
    return SearchHit(**{f.name: values.get(f.name) for f in dataclasses.fields(SearchHit)})


def test_the_search_answer_validated_at_once_is_the_one_validated_by_hit() -> None:
    request = MemorySearchRequest(agent_id="a", user_id="u", query="where", top_k=5)
    for hits in ([], [_hit(n) for n in range(5)]):
        by_hit = SearchResponse(
            agent_id="a",
            user_id="u",
            query="where",
            total=len(hits),
            results=[SearchResult.model_validate(h) for h in hits],
        )
        answer = _searched(request, hits)
        assert answer == by_hit
        assert answer.model_dump_json() == by_hit.model_dump_json()


def test_observe_adds_the_worker_before_the_request_id() -> None:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        response = Response(b"{}", headers={"X-Request-Id": "from-the-app"})
        await response(scope, receive, send)

    started: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            started.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    headers = [(b"x-request-id", b"client-id")]
    asyncio.run(Observe(app, worker=True)(_scope(headers), receive, send))
    asyncio.run(Observe(app)(_scope(headers), receive, send))
    with_worker, without = (m["headers"] for m in started)
    assert with_worker[-2:] == [
        (WORKER_HEADER, str(os.getpid()).encode()),
        (REQUEST_ID_HEADER, b"client-id"),
    ]
    assert without[-1] == (REQUEST_ID_HEADER, b"client-id")
    assert WORKER_HEADER not in dict(without)
    assert with_worker[:-2] == without[:-1]  # the app's own, its request id gone
