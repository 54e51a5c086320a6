"""`memexdb serve --workers 2` on the embedded PostgreSQL (started by the parent process,
its URL exported to the workers): one MCP client's calls succeed whichever worker
answers them, over stateless streamable HTTP and over legacy SSE (whose messages the
workers relay to the one holding the session). `X-Memex-Worker` shows who answered."""

from __future__ import annotations

import collections
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import psutil
import pytest
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import scratch_dir
from tests.live_service import Service, kill_postgres, wait_no_postgres
from tests.test_mcp_support import call, connected, serve

pytestmark = pytest.mark.e2e  # docs/development.md, 'Test tiers'

CALLS = 20
MAX_CALLS = 200  # bound on the wait for the second worker to get a connection


@pytest.fixture(scope="module")
def service() -> Iterator[tuple[Service, Path]]:
    root = scratch_dir("memexdb-workers-")
    data_dir = root / "data"
    try:
        with serve(root, workers=2, MEMEX_DATA_DIR=str(data_dir)) as running:
            yield running, data_dir
    finally:
        kill_postgres(data_dir)  # only after a failure; the last test checks it is clean
        shutil.rmtree(root, ignore_errors=True)


def workers(service: Service) -> set[str]:
    """Pids of the uvicorn worker processes (multiprocessing spawn children)."""
    parent = psutil.Process(service.proc.pid)
    return {str(p.pid) for p in parent.children() if "spawn_main" in " ".join(p.cmdline())}


class Answered:
    """An httpx2 client that opens a new connection for every request (so the kernel may
    hand each to either worker) and counts which worker answered."""

    def __init__(self) -> None:
        self.by: collections.Counter[str] = collections.Counter()

    async def _record(self, response: httpx2.Response) -> None:
        self.by[response.headers.get("x-memex-worker", "?")] += 1

    def client(self, **kwargs: Any) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            limits=httpx2.Limits(max_keepalive_connections=0),
            event_hooks={"response": [self._record]},
            **kwargs,
        )


async def calls_until_both_answered(client: Client, answered: Answered, tag: str) -> int:
    who = {"agent_id": f"workers-{tag}", "user_id": "alice"}
    made = 0
    for n in range(MAX_CALLS):
        if n >= CALLS and len(answered.by) >= 2:
            break
        if n % 2 == 0:
            await call(client, "store_memory", **who, content=f"note {n} about the launch plan")
        else:
            found = await call(client, "search_memories", **who, query="launch plan", top_k=3)
            assert found["total"] >= 1
        made += 1
    assert (await call(client, "count_memories", **who))["count"] == (made + 1) // 2
    return made


async def test_streamable_http_calls_succeed_on_any_worker(
    service: tuple[Service, Path],
) -> None:
    running, _ = service
    pids = workers(running)
    assert len(pids) == 2, pids
    answered = Answered()
    async with answered.client() as http:
        transport = streamable_http_client(f"{running.base_url}/mcp", http_client=http)
        async with connected(Client(transport, mode="legacy", read_timeout_seconds=120)) as c:
            made = await calls_until_both_answered(c, answered, "http")
    assert made >= CALLS
    # initialize, the notification and every call: each request its own connection.
    assert set(answered.by) == pids, answered.by


async def test_sse_session_works_across_workers(service: tuple[Service, Path]) -> None:
    running, _ = service
    answered = Answered()

    def factory(
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        return answered.client(headers=headers, timeout=timeout, auth=auth)

    transport = sse_client(f"{running.base_url}/sse", httpx_client_factory=factory)
    async with connected(Client(transport, mode="legacy", read_timeout_seconds=120)) as c:
        made = await calls_until_both_answered(c, answered, "sse")
    assert made >= CALLS
    assert set(answered.by) == workers(running), answered.by


def test_workers_stop_cleanly(service: tuple[Service, Path]) -> None:
    running, data_dir = service
    children = [psutil.Process(int(pid)) for pid in workers(running)]
    relay_dirs = {p.environ().get("MEMEX_MCP_RELAY_DIR") for p in children}
    assert len(relay_dirs) == 1 and None not in relay_dirs
    # An SSE client still connected does not hold the shutdown up (nor make it log errors).
    with httpx.stream("GET", f"{running.base_url}/sse", timeout=30) as stream:
        assert next(stream.iter_lines()) == "event: endpoint"
        running.send(signal.SIGTERM)
        code, _ = running.wait()
    assert code == 0, running.output()[-3000:]
    assert wait_no_postgres(data_dir) == []
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in children)
    assert not Path(str(relay_dirs.pop())).exists()
    assert "Traceback" not in running.output()
