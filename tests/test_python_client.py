"""memexdb-client (clients/python) against a real `memexdb` service: every method, the
retries (a real TCP proxy that loses a committed store's answer, or answers 503 once),
the Protocol both clients satisfy (mypy --strict), the generated routes, and the wheel
installed alone into a new venv."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from memexdb_client import (
    AsyncMemexClient,
    Busy,
    Conflict,
    Forbidden,
    InvalidArgument,
    MemexClient,
    NotFound,
    Retries,
    Unavailable,
)
from memexdb_client.types import File, Memory, MemoryPage, SearchHit

from memexdb.embedded import EmbeddedPostgres
from memexdb.operation_table import OPERATIONS
from tests.live_service import REPO, service_on_new_database

CLIENT_DIR = REPO / "clients" / "python"
A, U = "client-agent", "client-user"


@dataclass
class Live:
    base_url: str
    token: str  # an admin key for every agent (made first, by the keyless operator)
    dsn: str  # the service's database


@pytest.fixture(scope="module")
def live(pg_server: EmbeddedPostgres, template_db: str) -> Iterator[Live]:
    with service_on_new_database(pg_server, "pyclient") as service:
        with MemexClient(service.base_url) as operator:
            token = operator.create_key("admin", name="client tests").token
        yield Live(service.base_url, token, service.dsn)


# --- without a service ---


def test_the_generated_routes_are_current() -> None:
    sys.path.insert(0, str(CLIENT_DIR / "tools"))
    try:
        import generate_routes
    finally:
        sys.path.pop(0)
    committed = (CLIENT_DIR / "memexdb_client" / "_routes.py").read_text()
    assert generate_routes.render() == committed, (
        "run .venv/bin/python clients/python/tools/generate_routes.py"
    )


@pytest.mark.parametrize(
    "op", [op for op in OPERATIONS if op.rest is not None], ids=lambda op: op.name
)
def test_every_rest_operation_has_a_client_method(op: Any) -> None:
    for cls in (AsyncMemexClient, MemexClient):
        assert callable(getattr(cls, op.name, None)), f"{cls.__name__}.{op.name} is missing"


def test_every_hand_written_rest_endpoint_has_a_client_method() -> None:
    # the streamed ones, outside the operation table; health and metrics are not the API's
    from memexdb.rest.app import ENDPOINTS

    table = {op.name for op in OPERATIONS}
    handwritten = {
        e.operation_id for e in ENDPOINTS if e.operation_id not in table and e.tag != "operations"
    }
    assert handwritten == {"export", "import_memories"}
    for name in handwritten:
        for cls in (AsyncMemexClient, MemexClient):
            assert callable(getattr(cls, name, None)), f"{cls.__name__}.{name} is missing"


def test_an_empty_or_malformed_id_is_refused_before_anything_is_sent() -> None:
    """Issue 33: `forget(a, u, "")` was DELETE /v1/memories/?..., which the service
    redirected to the erase of the user. The client refuses it (and every empty or
    malformed id) itself: the transport below records every request that leaves."""
    sent: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={"count": 0})

    memex = MemexClient("http://memex.invalid", transport=httpx.MockTransport(record))
    refusals: list[tuple[str, Any, str]] = [
        ("forget", lambda: memex.forget(A, U, ""), "memory_id"),  # type: ignore[arg-type]
        ("get", lambda: memex.get(A, U, "123"), "memory_id"),  # type: ignore[arg-type]
        ("update", lambda: memex.update(A, U, "x", importance=2), "memory_id"),  # type: ignore[arg-type]
        ("revoke_key", lambda: memex.revoke_key(""), "key"),
        ("read_file", lambda: memex.read_file(A, U, ""), "path"),
        ("delete_file", lambda: memex.delete_file(A, U, ""), "path"),
        ("erase_user", lambda: memex.erase_user(A, "", confirm=""), "user_id"),
        ("count", lambda: memex.count("", U), "agent_id"),
    ]
    with memex:
        for name, call, field in refusals:
            with pytest.raises(InvalidArgument) as refused:
                call()
            assert refused.value.field == field, name
        assert sent == []
        memex.count(A, U)  # a valid call goes out
        assert [r.url.path for r in sent] == ["/v1/memories/count"]


def test_the_client_package_does_not_import_the_server() -> None:
    for path in (CLIENT_DIR / "memexdb_client").glob("*.py"):
        text = path.read_text()
        assert "import memexdb\n" not in text and "from memexdb." not in text, path
        assert "from memexdb import" not in text, path


def test_both_clients_satisfy_the_protocol(tmp_path: Path) -> None:
    checked = tmp_path / "protocol_check.py"
    checked.write_text(
        textwrap.dedent(
            """
            from memexdb.client import AsyncMemex
            from memexdb_client import AsyncMemexClient
            from memexdb_client.api import AsyncMemoryAPI


            def in_process(memex: AsyncMemex) -> AsyncMemoryAPI:
                return memex


            def over_http(client: AsyncMemexClient) -> AsyncMemoryAPI:
                return client
            """
        )
    )
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(checked)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # and a client without a method of the Protocol fails the same check
    checked.write_text(
        checked.read_text()
        + "\n\nclass Partial:\n    async def count(self, agent_id: str, user_id: str) -> int:"
        "\n        return 0\n\n\ndef partial(p: Partial) -> AsyncMemoryAPI:\n    return p\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(checked)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 1 and "Partial" in result.stdout, result.stdout


# --- every method against the live service ---


async def test_memories(live: Live) -> None:
    async with AsyncMemexClient(live.base_url, live.token) as memex:
        dog = await memex.store(A, U, "I adopted a golden retriever named Max", importance=1.5)
        assert isinstance(dog, Memory) and dog.importance == 1.5
        tax = await memex.store(A, U, "The tax report is due on April 15", memory_type="semantic")
        hits = await memex.search(A, U, "what pet do I have?", top_k=1)
        assert isinstance(hits[0], SearchHit) and hits[0].id == dog.id
        assert await memex.count(A, U) == 2
        assert await memex.count(A, U, "semantic") == 1
        assert (await memex.get(A, U, dog.id)).content == dog.content
        changed = await memex.update(A, U, dog.id, content="I adopted a retriever named Max")
        assert changed.content.startswith("I adopted a retriever")
        page = await memex.list_memories(A, U, limit=1)
        assert isinstance(page, MemoryPage) and len(page.memories) == 1 and page.next_cursor
        listed = [m.id async for m in memex.iter_memories(A, U, limit=1)]
        assert sorted(listed) == sorted([dog.id, tax.id])
        many = await memex.store_many(
            [
                {"agent_id": A, "user_id": U, "content": "first of a batch"},
                {"agent_id": A, "user_id": U, "content": "second of a batch"},
            ]
        )
        assert [m.content for m in many] == ["first of a batch", "second of a batch"]
        exported = [row async for row in memex.export(A, U)]
        assert exported[0]["record"] == "header"
        assert {row["id"] for row in exported if row["record"] == "memory"} == {
            str(m) for m in [dog.id, tax.id, *[m.id for m in many]]
        }
        assert await memex.forget(A, U, tax.id) is None
        with pytest.raises(NotFound):
            await memex.get(A, U, tax.id)
        with pytest.raises(InvalidArgument) as bad:
            await memex.store(A, U, "x", importance=7)
        assert bad.value.field == "importance"
        embedded = await memex.embed_texts(["one", "two"])
        assert len(embedded.vectors) == 2 and len(embedded.vectors[0]) == 384
        erased = await memex.erase_user(A, "someone-else", confirm="someone-else")
        assert isinstance(erased, dict)


async def test_a_store_with_an_id_stores_once(live: Live) -> None:
    async with AsyncMemexClient(live.base_url, live.token) as memex:
        given = uuid.uuid4()
        # 0.3 is no real: the check compares it as the column stores it
        first = await memex.store(A, "idem", "stored once", id=given, importance=0.3)
        again = await memex.store(A, "idem", "stored once", id=given, importance=0.3)
        assert first == again and first.id == given
        with pytest.raises(Conflict):
            await memex.store(A, "idem", "other content", id=given)
        with pytest.raises(Conflict):  # the same content for another user
            await memex.store(A, "idem-other", "stored once", id=given, importance=0.3)
        assert await memex.count(A, "idem") == 1
        ids = [uuid.uuid4(), uuid.uuid4()]
        batch = [
            {"agent_id": A, "user_id": "idem", "content": "batch one", "id": ids[0]},
            {"agent_id": A, "user_id": "idem", "content": "batch two", "id": ids[1]},
        ]
        stored = await memex.store_many(batch)
        assert [m.id for m in stored] == ids
        assert await memex.store_many(batch) == stored
        with pytest.raises(Conflict):  # all or nothing: the new third one is not stored
            await memex.store_many(
                [
                    {**batch[0], "content": "batch one, changed"},
                    {"agent_id": A, "user_id": "idem", "content": "batch three"},
                ]
            )
        assert await memex.count(A, "idem") == 3
        # an item without an id among items with one gets a new id
        mixed = await memex._request(
            "store_many",
            {"memories": [batch[0], {k: v for k, v in batch[1].items() if k != "id"}]},
        )
        assert mixed["memories"][0]["id"] == str(ids[0])
        assert mixed["memories"][1]["id"] not in {str(i) for i in ids}
        assert await memex.count(A, "idem") == 4


async def test_files(live: Live) -> None:
    async with AsyncMemexClient(live.base_url, live.token) as memex:
        written = await memex.write_file(A, U, "user/plan.md", "# Plan\n\nship it\n")
        assert isinstance(written, File) and written.revision == 1
        with pytest.raises(Conflict):
            await memex.write_file(A, U, "user/plan.md", "# Other\n", base_revision=0)
        patched = await memex.patch_file(A, U, "user/plan.md", heading="Later", append="rest")
        assert "rest" in patched.content
        assert (await memex.read_file(A, U, "user/plan.md", from_line=1, to_line=1)).content
        await memex.write_file(A, U, "user/other.md", "another file\n")
        files, after = await memex.list_files(A, U, limit=1)
        assert len(files) == 1 and after is not None
        assert [f.path async for f in memex.iter_files(A, U, limit=1)] == [
            "user/other.md",
            "user/plan.md",
        ]
        revisions = await memex.list_revisions(A, U, "user/plan.md")
        assert [r.revision for r in revisions] == [2, 1]
        assert [r.revision async for r in memex.iter_revisions(A, U, "user/plan.md", limit=1)] == [
            2,
            1,
        ]
        assert (await memex.get_revision(A, U, "user/plan.md", 1)).content == "# Plan\n\nship it\n"
        diff = await memex.diff_revisions(A, U, "user/plan.md", 1, 2)
        assert "+rest" in diff
        restored = await memex.restore_revision(A, U, "user/plan.md", 1)
        assert restored.revision == 3
        block = await memex.smart_read(A, U, "what is the plan?", budget=500)
        assert block.chars <= 500
        # a file's memory changes only by its path: 409, as the file's state refuses it
        with pytest.raises(Conflict):
            await memex.update(A, U, restored.memory_id, content="not through the file")
        with pytest.raises(Conflict):
            await memex.forget(A, U, restored.memory_id)
        deleted = await memex.delete_file(A, U, "user/other.md")
        assert deleted.path == "user/other.md"
        events = await memex.access_log(A, U, limit=2)
        assert len(events) == 2
        assert len([e async for e in memex.iter_access_log(A, U, limit=2)]) > 2
        passages = await memex.search_passages(A, U, "plan")
        assert passages["passages"] and passages["llm"] == "not_asked"
        memorized = await memex.memorize(A, U, "I moved to Lisbon last week.")
        assert memorized["mode"] == "fallback"


async def test_admin(live: Live) -> None:
    async with AsyncMemexClient(live.base_url, live.token) as memex:
        config = await memex.dream_config()
        assert "threshold" in config
        after = await memex.set_dream_config(threshold=config["threshold"])
        assert after == config
        await memex.store(A, U, "a memory, so that the tenant exists")
        assert await memex.set_dream_paused(A, U, True) is True
        # a user id that is no plain path segment (quoted; a "/" the router cannot take)
        await memex.store(A, "a b?c#d", "a memory of an awkward user id")
        assert await memex.set_dream_paused(A, "a b?c#d", True) is True
        users = await memex.dream_users(A)
        assert any(u.user_id == U and u.paused for u in users)
        assert [u async for u in memex.iter_dream_users(A, limit=1)]
        assert await memex.set_dream_paused(A, U, False) is False
        ran = await memex.run_now(A, U, force=True, dry_run=True)
        assert isinstance(ran.runs, list) and ran.skipped == []
        assert isinstance(await memex.consolidation_runs(A, U), list)
        assert isinstance([r async for r in memex.iter_consolidation_runs(A)], list)
        with pytest.raises(NotFound):
            await memex.restore_consolidation(999_999)
        assert isinstance(await memex.audit_events(limit=5), list)
        assert isinstance([e async for e in memex.iter_audit_events(limit=2)], list)
        created = await memex.create_key("read", agent_id=A, user_ids=[U], name="reader")
        assert created.token
        assert created.id in {k.id for k in await memex.list_keys()}
        async with AsyncMemexClient(live.base_url, created.token) as reader:
            assert await reader.count(A, U) >= 1
            with pytest.raises(Forbidden):
                await reader.store(A, U, "a reader cannot write")
        revoked = await memex.revoke_key(created.prefix)
        assert revoked.id == created.id


def test_the_sync_client(live: Live) -> None:
    with MemexClient(live.base_url, api_key=live.token) as memex:
        stored = memex.store(A, "sync", "a synchronous memory")
        assert memex.search(A, "sync", "synchronous")[0].id == stored.id
        assert [m.id for m in memex.iter_memories(A, "sync")] == [stored.id]
        rows = list(memex.export(A, "sync"))
        assert [row["id"] for row in rows if row["record"] == "memory"] == [str(stored.id)]
        memex.erase_user(A, "sync", confirm="sync")
        assert memex.import_memories(rows).kinds["memory"] == {"imported": 1, "skipped": 0}
        assert memex.get(A, "sync", stored.id) == stored


# --- retries, through a real TCP proxy in front of the service ---


class Proxy:
    """A TCP proxy on a free loopback port in front of `upstream` (host, port), on its own
    thread. `lose_next_answer`: the next request is forwarded (the service commits it)
    but its answer is dropped and the client's connection closed. `refuse_next` (a status
    such as 503): the next request is answered with it and Retry-After, never forwarded."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.lose_next_answer = False
        self.refuse_next: int | None = None
        self.requests: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.threads: list[threading.Thread] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.listener.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _serve(self, client: socket.socket) -> None:
        """One client connection: a request at a time (the client waits for each answer)."""
        upstream = socket.create_connection(self.upstream)
        try:
            while True:
                request = _read_message(client)
                if request is None:
                    return
                self.requests.append(request.split(b"\r\n", 1)[0])
                if self.refuse_next is not None:
                    status, self.refuse_next = self.refuse_next, None
                    body = b'{"error": {"code": "busy", "message": "try again", "fields": []}}'
                    client.sendall(
                        f"HTTP/1.1 {status} Busy\r\nContent-Type: application/json\r\n"
                        f"Retry-After: 1\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                        + body
                    )
                    continue
                upstream.sendall(request)
                answer = _read_message(upstream)
                if answer is None:
                    return
                if self.lose_next_answer:
                    self.lose_next_answer = False
                    return  # the service committed; the client never hears it
                client.sendall(answer)
        finally:
            client.close()
            upstream.close()


def _read_message(sock: socket.socket) -> bytes | None:
    """One HTTP/1.1 message with a Content-Length body (or chunked, read to its end)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    headers = head.lower()
    if b"transfer-encoding: chunked" in headers:
        while not body.endswith(b"0\r\n\r\n"):
            chunk = sock.recv(65536)
            if not chunk:
                return None
            body += chunk
        return head + b"\r\n\r\n" + body
    length = 0
    for line in headers.split(b"\r\n"):
        if line.startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        body += chunk
    return head + b"\r\n\r\n" + body


@pytest.fixture
def proxy(live: Live) -> Iterator[Proxy]:
    host, port = live.base_url.removeprefix("http://").split(":")
    running = Proxy((host, int(port)))
    yield running
    running.close()


async def test_a_store_whose_answer_is_lost_is_retried_and_stored_once(
    live: Live, proxy: Proxy
) -> None:
    async with AsyncMemexClient(proxy.base_url, live.token) as memex:
        assert await memex.count(A, "lost") == 0
        proxy.lose_next_answer = True
        stored = await memex.store(A, "lost", "the answer to this store is lost")
        assert await memex.count(A, "lost") == 1
        assert (await memex.get(A, "lost", stored.id)).content == stored.content
    stores = [line for line in proxy.requests if line.startswith(b"POST /v1/memories ")]
    assert len(stores) == 2  # sent twice, stored once


async def test_a_batch_whose_answer_is_lost_is_retried_and_stored_once(
    live: Live, proxy: Proxy
) -> None:
    async with AsyncMemexClient(proxy.base_url, live.token) as memex:
        proxy.lose_next_answer = True
        items = [{"agent_id": A, "user_id": "lost-batch", "content": f"item {i}"} for i in "ab"]
        stored = await memex.store_many(items)
        assert [m.content for m in stored] == ["item a", "item b"]
        assert await memex.count(A, "lost-batch") == 2


async def test_a_lost_answer_to_a_write_that_is_not_idempotent_is_raised(
    live: Live, proxy: Proxy
) -> None:
    async with AsyncMemexClient(proxy.base_url, live.token) as memex:
        await memex.write_file(A, "lost", "user/log.md", "# Log\n")
        proxy.lose_next_answer = True
        with pytest.raises(Unavailable) as lost:
            await memex.patch_file(A, "lost", "user/log.md", append="once")
        assert isinstance(lost.value.__cause__, httpx.RemoteProtocolError)
        assert lost.value.url == proxy.base_url and "may have been applied" in str(lost.value)
        # it was applied once: the caller decides (read it, or patch with base_revision)
        assert (await memex.read_file(A, "lost", "user/log.md")).content.count("once") == 1


async def test_503_is_retried_after_retry_after(live: Live, proxy: Proxy) -> None:
    async with AsyncMemexClient(proxy.base_url, live.token) as memex:
        proxy.refuse_next = 503
        started = time.monotonic()
        assert await memex.count(A, "lost") >= 0
        assert time.monotonic() - started >= 1.0  # Retry-After: 1
    assert len(proxy.requests) == 2


async def test_retries_are_bounded(live: Live, proxy: Proxy) -> None:
    async with AsyncMemexClient(proxy.base_url, live.token, retries=1) as memex:
        proxy.refuse_next = 503
        with pytest.raises(Busy):
            await memex.count(A, "lost")
    assert len(proxy.requests) == 1
    policy = Retries(attempts=10, max_total=0.5)
    async with AsyncMemexClient(proxy.base_url, live.token, retries=policy) as memex:
        proxy.refuse_next = 503
        started = time.monotonic()
        with pytest.raises(Busy):  # Retry-After: 1 would pass the 0.5 s budget
            await memex.count(A, "lost")
        assert time.monotonic() - started < 0.5


async def test_a_rate_limited_store_is_retried(live: Live, proxy: Proxy) -> None:
    async with AsyncMemexClient(proxy.base_url, live.token) as memex:
        proxy.refuse_next = 429
        await memex.store(A, "limited", "stored after a 429")
        assert await memex.count(A, "limited") == 1


# --- the wheel, alone in a new venv ---

SCRIPT = """
import sys
from memexdb_client import MemexClient

base_url, token = sys.argv[1], sys.argv[2]
with MemexClient(base_url, api_key=token) as memex:
    stored = memex.store("wheel", "alice", "Alice prefers tea to coffee")
    hits = memex.search("wheel", "alice", "what does Alice drink?", top_k=1)
    assert hits[0].id == stored.id, hits
    memex.write_file("wheel", "alice", "user/profile.md", "# Alice\\n\\ntea\\n")
    assert "tea" in memex.read_file("wheel", "alice", "user/profile.md").content
    rows = list(memex.export("wheel", "alice"))
    # the file is a memory too (memexdb.files): both are exported, and its revision
    memories = [row for row in rows if row["record"] == "memory"]
    assert str(stored.id) in [row["id"] for row in memories] and len(memories) == 2, rows
    assert [row["revision"] for row in rows if row["record"] == "file_revision"] == [1], rows
    memex.erase_user("wheel", "alice", confirm="alice")
    result = memex.import_memories(rows)
    assert result.kinds["memory"] == {"imported": 2, "skipped": 0}, result
    assert "tea" in memex.read_file("wheel", "alice", "user/profile.md").content
    print("ok", len(memories))
"""

SERVER_ONLY = {"psycopg", "psycopg-binary", "fastembed", "onnx", "onnxruntime", "uvicorn", "mcp"}


def test_the_wheel_alone_in_a_new_venv(live: Live, tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels, CLIENT_DIR],
        check=True,
        timeout=600,
    )
    (wheel,) = wheels.glob("memexdb_client-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=300)
    python = venv / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "-q", wheel], check=True, timeout=600)
    listed = subprocess.run(
        [python, "-m", "pip", "list", "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    installed = {p["name"].lower() for p in json.loads(listed.stdout)}
    print("the wheel pulled in:", sorted(installed))
    assert {"memexdb-client", "httpx", "pydantic"} <= installed
    assert not installed & SERVER_ONLY, installed & SERVER_ONLY
    assert "memexdb" not in installed
    script = tmp_path / "use_client.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    result = subprocess.run(
        [python, "-I", script, live.base_url, live.token],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "ok 2"
    shutil.rmtree(venv, ignore_errors=True)


# --- the documented examples run as written ---

DOCUMENTED = [REPO / "docs" / "python-client.md", CLIENT_DIR / "README.md"]


@pytest.mark.parametrize("page", DOCUMENTED, ids=lambda p: p.name)
def test_the_documented_examples_run(live: Live, page: Path, tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
    assert blocks
    env = {**os.environ, "MEMEX_URL": live.base_url, "MEMEX_API_KEY": live.token}
    for n, block in enumerate(blocks):
        script = tmp_path / f"example_{n}.py"
        script.write_text(block)
        result = subprocess.run(
            [sys.executable, script], capture_output=True, text=True, timeout=300, env=env
        )
        assert result.returncode == 0, f"{page.name} example {n}:\n{result.stderr}"


def test_a_path_no_route_takes_is_a_json_404(live: Live) -> None:
    """A decoded newline in a path parameter passes no Mount of the service's app: the
    answer is still the API's typed JSON error, which the client raises as NotFound."""
    headers = {"Authorization": f"Bearer {live.token}"}
    answer = httpx.put(
        f"{live.base_url}/v1/admin/dream/users/%0Aab/paused",
        json={"agent_id": A, "paused": True},
        headers=headers,
    )
    assert answer.status_code == 404
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["error"]["code"] == "not_found"
    with MemexClient(live.base_url, api_key=live.token) as memex, pytest.raises(NotFound):
        memex.set_dream_paused(A, "\nab", True)


async def test_run_now_says_which_step_the_scheduler_held(live: Live) -> None:
    """Issue 34, item 7, over HTTP: while the scheduler holds the tenant's consolidation
    lock, a forced run-now answers the dream step and says the condense step was skipped
    (the client used to return only the runs, dropping `skipped`)."""
    agent = "client-skipped-agent"
    async with AsyncMemexClient(live.base_url, live.token) as memex:
        await memex.store(agent, U, "a memory, so that the tenant exists")
        with psycopg.connect(live.dsn) as scheduler:  # a tick in the middle of this tenant
            scheduler.execute(
                "select pg_advisory_xact_lock(memex._lock_key('consolidate',"
                " jsonb_build_array(%s::text, %s::text)::text))",
                (agent, U),
            )
            held = await memex.run_now(agent, U, force=True)
            scheduler.rollback()
        assert [(s.step, "consolidation lock" in s.reason) for s in held.skipped] == [
            ("condense", True)
        ]
        assert [run.kind for run in held.runs] == ["dream"]
        free = await memex.run_now(agent, U, force=True)
        assert free.skipped == []
        assert "condense" in {run.kind for run in free.runs}
