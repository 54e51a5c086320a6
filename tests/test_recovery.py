"""The database heals under a running service: `kill -9` of the postmaster under `memexdb
serve` (embedded) or under a MEMEX_DATABASE_URL server, and under `memexdb mcp`.
While it is down, requests fail at once with 503 / a tool error; once it is back, the
same process serves again, with the data it had.

The embedded server is kept down for as long as a test holds its data dir's lock (the
lock every start takes), so that "while down" is a state the test controls rather than
a race with a restart that takes well under a second here."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from memexdb import migrate
from memexdb.embedded import EmbeddedPostgres
from tests.conftest import scratch_dir
from tests.live_service import (
    Service,
    cli_args,
    client,
    free_port,
    kill_postgres,
    service_env,
    wait_no_postgres,
    wait_until,
)
from tests.test_mcp_support import call, connected, serve, stdio_client_of, stdio_params

FAIL_FAST_SECONDS = 1.0  # "at once": the pool's timeout, which it used to wait, is 5 s
DOWN_NOTICED_SECONDS = 10.0
RECOVERY_SECONDS = 30.0
DOG = "I adopted a golden retriever puppy and named him Max."
TAX = "The quarterly tax report is due on April 15."


@pytest.fixture
def data_dir() -> Iterator[Path]:
    root = scratch_dir("memexdb-heal-")
    path = root / "data"
    try:
        yield path
    finally:
        kill_postgres(path)  # only after a failed test; each test checks it is clean
        shutil.rmtree(root, ignore_errors=True)


def kill_postmaster(pgdata: Path) -> int:
    pid = int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: not alive(pid), timeout=10.0, interval=0.01), pid
    return pid


def alive(pid: int) -> bool:
    # A zombie is dead: whoever reaps the daemonised postmaster may take its time.
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@contextlib.contextmanager
def start_blocked(data_dir: Path) -> Iterator[None]:
    """Hold the data dir's lock: no process can (re)start its server meanwhile."""
    fd = os.open(data_dir / "lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def status_of(http: httpx.Client, path: str = "/health") -> int:
    try:
        return http.get(path, timeout=10.0).status_code
    except httpx.TransportError:
        return 0


def healthy_everywhere(http: httpx.Client, workers: int, tries: int = 20) -> bool:
    """Whether /health said 200 from each of `workers` worker processes (X-Memex-Worker),
    each asked on a new connection (a kept-alive one stays with one worker), and nothing
    but 200 in at most `tries` answers."""
    pids: set[str] = set()
    for _ in range(tries):
        try:
            r = http.get("/health", headers={"connection": "close"}, timeout=10.0)
        except httpx.TransportError:
            return False
        if r.status_code != 200:
            return False
        pids.add(r.headers["x-memex-worker"])
        if len(pids) >= workers:
            return True
    return False


def without_access_log(output: str) -> str:
    """The service's own log lines (the keeper's and the watch's), not one line per
    request: the polling above fills the tail of the output with those."""
    lines = output.splitlines()
    return "\n".join(line for line in lines if not ('" 503 ' in line or '" 200 ' in line))


def assert_fails_fast(http: httpx.Client, who: dict[str, str]) -> None:
    for method, path, kwargs in (
        ("POST", "/v1/memories", {"json": {**who, "content": TAX}}),
        ("POST", "/v1/memories/search", {"json": {**who, "query": "dog"}}),
        ("GET", "/v1/memories/count", {"params": who}),
        ("GET", "/health", {}),
    ):
        started = time.monotonic()
        r = http.request(method, path, **kwargs)
        took = time.monotonic() - started
        assert r.status_code == 503, (path, r.text)
        if path != "/health":
            assert r.json()["error"]["code"] == "database_unavailable", r.text
        assert took < FAIL_FAST_SECONDS, f"{method} {path} took {took:.2f} s to answer 503"


def serve_embedded(data_dir: Path, workers: int) -> Service:
    """`memexdb serve --workers N` on the embedded server in `data_dir`."""
    port = free_port()
    return Service(
        cli_args("serve", "--port", str(port), "--workers", str(workers)),
        service_env(MEMEX_DATA_DIR=str(data_dir)),
        port,
        data_dir.parent / "serve.log",
    )


@pytest.mark.parametrize("workers", [1, 2])
def test_serve_heals_a_killed_embedded_postmaster(data_dir: Path, workers: int) -> None:
    who = {"agent_id": "heal", "user_id": uuid.uuid4().hex[:8]}
    service = serve_embedded(data_dir, workers)
    try:
        service.wait_healthy()
        with client(service.base_url) as http:
            assert wait_until(lambda: healthy_everywhere(http, workers), RECOVERY_SECONDS)
            # Every worker's job runner has tried the jobs lock by now: one holds it.
            time.sleep(1.0)
            assert service.output().count("runs the scheduled jobs") == 1, service.output()
            assert http.post("/v1/memories", json={**who, "content": DOG}).status_code == 201

            with start_blocked(data_dir):
                killed_at = time.monotonic()
                kill_postmaster(data_dir / "pgdata")
                # Its backends outlive it until each notices (one answered a pooled
                # connection's query with 200 in a CI run): wait until all are gone.
                assert wait_no_postgres(data_dir) == []
                # Even the first request, which finds the server gone, answers at once.
                asked_at = time.monotonic()
                r = http.get("/v1/memories/count", params=who)
                first = time.monotonic() - asked_at
                assert r.status_code == 503 and first < FAIL_FAST_SECONDS, (first, r.text)
                assert wait_until(
                    lambda: all(status_of(http) == 503 for _ in range(4)),
                    timeout=DOWN_NOTICED_SECONDS,
                ), "/health never said 503"
                noticed = time.monotonic() - killed_at
                assert_fails_fast(http, who)
                released_at = time.monotonic()
            assert wait_until(lambda: healthy_everywhere(http, workers), RECOVERY_SECONDS, 0.05)
            now = time.monotonic()
            print(
                f"\nworkers={workers}: first request 503 in {first:.2f} s, /health 503"
                f" {noticed:.2f} s after the kill; healthy"
                f" {now - released_at:.2f} s after the restart could begin"
            )
            r = http.get("/v1/memories/count", params=who)
            assert r.json()["count"] == 1, r.text
            r = http.post("/v1/memories/search", json={**who, "query": "what is my dog called?"})
            assert r.json()["results"][0]["content"] == DOG
            assert http.post("/v1/memories", json={**who, "content": TAX}).status_code == 201

            # The same, with nothing holding the restart back: a few seconds at most.
            killed_at = time.monotonic()
            kill_postmaster(data_dir / "pgdata")
            time.sleep(0.05)
            assert wait_until(lambda: healthy_everywhere(http, workers), RECOVERY_SECONDS, 0.05), (
                without_access_log(service.output())[-4000:]
            )
            print(f"workers={workers}: healthy {time.monotonic() - killed_at:.2f} s after kill -9")
            assert http.get("/v1/memories/count", params=who).json()["count"] == 2
        # The process that owns the server restarts it; the workers only reconnect. (It
        # logs that once start() returns, which may be after clients got through.)
        restarts = lambda: service.output().count("restarted it in")  # noqa: E731
        wait_until(lambda: restarts() >= 2, timeout=10.0)
        assert restarts() == 2, service.output()[-4000:]
        assert service.stop() == 0
        assert wait_no_postgres(data_dir) == []
        assert "Traceback" not in service.output(), service.output()[-4000:]
    finally:
        service.close()


def uvicorn_workers(service: Service) -> list[psutil.Process]:
    """The worker processes uvicorn spawned under `memexdb serve --workers N`."""
    workers = []
    for p in psutil.Process(service.proc.pid).children():
        with contextlib.suppress(psutil.Error):  # e.g. the killed one, until reaped
            if p.status() != psutil.STATUS_ZOMBIE and "spawn_main" in " ".join(p.cmdline()):
                workers.append(p)
    return workers


def served_by(http: httpx.Client, who: dict[str, str], times: int = 6) -> set[int]:
    """The worker pids that answered `times` successful counts (X-Memex-Worker), each on a
    new connection (a kept-alive one stays with one worker)."""
    pids = set()
    for _ in range(times):
        with contextlib.suppress(httpx.TransportError):
            r = http.get(
                "/v1/memories/count", params=who, headers={"connection": "close"}, timeout=10.0
            )
            if r.status_code == 200:
                pids.add(int(r.headers["x-memex-worker"]))
    return pids


def test_worker_started_during_an_outage_waits_for_the_database(data_dir: Path) -> None:
    """uvicorn replaces a worker that dies, also while the database is down: the new one
    waits for the database and then serves, rather than failing its startup."""
    who = {"agent_id": "heal-worker", "user_id": "u"}
    service = serve_embedded(data_dir, 2)
    try:
        service.wait_healthy()
        with client(service.base_url) as http:
            assert wait_until(lambda: healthy_everywhere(http, 2), RECOVERY_SECONDS)
            assert http.post("/v1/memories", json={**who, "content": DOG}).status_code == 201
            before = {p.pid for p in uvicorn_workers(service)}
            assert len(before) == 2, before
            with start_blocked(data_dir):
                kill_postmaster(data_dir / "pgdata")
                victim = sorted(before)[0]
                os.kill(victim, signal.SIGKILL)
                # uvicorn notices the dead worker and starts another, which finds no
                # database; held down for longer than one connection attempt
                assert wait_until(
                    lambda: {p.pid for p in uvicorn_workers(service)} - before,
                    # at once, though a live worker may take WORKER_HEALTHCHECK_SECONDS to
                    # answer a ping (memexdb.supervisor: a ping stops when its worker dies)
                    timeout=2 * DOWN_NOTICED_SECONDS,
                ), service.output()[-4000:]
                assert wait_until(
                    lambda: "starts serving once it is back" in service.output(),
                    timeout=RECOVERY_SECONDS,
                ), service.output()[-4000:]
                time.sleep(6.0)  # past one attempt (memexdb.runtime.startup.ATTEMPT_SECONDS)
            # A worker started during the outage answers (every response names its worker):
            # one that had failed its startup would have been replaced, and logged it.
            assert wait_until(lambda: served_by(http, who) - before, RECOVERY_SECONDS, 0.05), (
                service.output()[-4000:]
            )
            assert "startup failed" not in service.output(), service.output()[-4000:]
            assert http.get("/v1/memories/count", params=who).json()["count"] == 1

            # Stopped while a worker waits: it ends at once, without a traceback.
            with start_blocked(data_dir):
                kill_postmaster(data_dir / "pgdata")
                os.kill(uvicorn_workers(service)[0].pid, signal.SIGKILL)
                assert wait_until(
                    lambda: service.output().count("starts serving once it is back") >= 2,
                    timeout=RECOVERY_SECONDS,
                ), service.output()[-4000:]
                service.send(signal.SIGTERM)
        assert service.wait()[0] == 0
        assert wait_no_postgres(data_dir) == []
        assert "Traceback" not in service.output(), service.output()[-4000:]
    finally:
        service.close()


def test_serve_reconnects_to_a_restarted_database_url(data_dir: Path) -> None:
    pg = EmbeddedPostgres(data_dir)
    service = None
    who = {"agent_id": "heal-url", "user_id": "u"}
    try:
        dsn = pg.start()
        migrate(dsn)
        port = free_port()
        service = Service(
            cli_args("serve", "--port", str(port)),
            service_env(MEMEX_DATABASE_URL=dsn),
            port,
            data_dir.parent / "serve.log",
        )
        service.wait_healthy()
        with client(service.base_url) as http:
            assert http.post("/v1/memories", json={**who, "content": DOG}).status_code == 201
            kill_postmaster(pg.pgdata)  # nobody restarts it: this server is not memexdb's
            assert wait_until(lambda: status_of(http) == 503, timeout=DOWN_NOTICED_SECONDS)
            assert_fails_fast(http, who)

            pg.start()  # stops the orphaned backends, starts the server again
            back_at = time.monotonic()
            assert wait_until(lambda: status_of(http) == 200, RECOVERY_SECONDS, 0.05)
            print(f"\nURL: healthy {time.monotonic() - back_at:.2f} s after the server was back")
            assert http.get("/v1/memories/count", params=who).json()["count"] == 1
            assert http.post("/v1/memories", json={**who, "content": TAX}).status_code == 201
        assert service.stop() == 0
    finally:
        if service is not None:
            service.close()
        pg.stop()


async def test_mcp_stdio_heals_a_killed_embedded_postmaster(data_dir: Path, tmp_path: Path) -> None:
    who = {"agent_id": "heal-mcp", "user_id": "u"}
    env = {"MEMEX_DATA_DIR": str(data_dir)}
    log_path = tmp_path / "stderr.log"
    with log_path.open("w") as errlog:
        async with connected(stdio_client_of(stdio_params(env), errlog)) as c:
            await call(c, "store_memory", **who, content=DOG)
            with start_blocked(data_dir):
                kill_postmaster(data_dir / "pgdata")
                deadline = time.monotonic() + DOWN_NOTICED_SECONDS
                while True:
                    result = await c.call_tool("count_memories", who)
                    if result.is_error or time.monotonic() > deadline:
                        break
                assert result.is_error, result
                await asyncio.sleep(0.5)  # the outage has been noticed by now
                started = time.monotonic()
                result = await c.call_tool("count_memories", who)
                took = time.monotonic() - started
                assert result.is_error, result
                assert "unavailable" in result.content[0].text, result  # type: ignore[union-attr]
                assert took < FAIL_FAST_SECONDS, took
            deadline = time.monotonic() + RECOVERY_SECONDS
            while True:
                result = await c.call_tool("count_memories", who)
                if not result.is_error or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.05)
            assert result.structured_content == {**who, "memory_type": None, "count": 1}, result
            await call(c, "store_memory", **who, content=TAX)
    log = log_path.read_text()
    assert "restarted it in" in log, log[-3000:]
    assert wait_no_postgres(data_dir) == [], log[-3000:]


async def test_mcp_stdio_sharing_a_services_server_reconnects_after_its_restart(
    data_dir: Path, tmp_path: Path
) -> None:
    """`memexdb mcp` next to `memexdb serve` on one data dir: the service owns the server
    and restarts it after kill -9; the stdio process only reconnects (exactly one process
    restarts it)."""
    who = {"agent_id": "heal-shared", "user_id": "u"}
    env = {"MEMEX_DATA_DIR": str(data_dir)}
    log_path = tmp_path / "stderr.log"
    with serve(tmp_path, **env) as service, log_path.open("w") as errlog:
        async with connected(
            stdio_client_of(stdio_params(env, cli_args("mcp", "-v")), errlog)
        ) as c:
            await call(c, "store_memory", **who, content=DOG)
            kill_postmaster(data_dir / "pgdata")
            deadline = time.monotonic() + RECOVERY_SECONDS
            while True:
                result = await c.call_tool("count_memories", who)
                if not result.is_error or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.05)
            assert result.structured_content == {**who, "memory_type": None, "count": 1}, result
            await call(c, "store_memory", **who, content=TAX)
        assert wait_until(lambda: "restarted it in" in service.output(), timeout=10.0)
    log = log_path.read_text()
    assert "using the embedded PostgreSQL of pid" in log, log[-3000:]
    assert "restarted it in" not in log and "now running" not in log, log[-3000:]
    assert wait_no_postgres(data_dir) == []


STOPPED_BEFORE_THE_WAIT = """
import asyncio, logging, signal, sys
import uvicorn
from memexdb.client import AsyncMemex
from memexdb.runtime.startup import when_database_is_up

# uvicorn's worker handles SIGTERM before our wait installs its own handler; a stop in
# that window reaches only uvicorn's (its Server.handle_exit sets should_exit)
server = uvicorn.Server(uvicorn.Config("memexdb.service:app_from_env"))
signal.signal(signal.SIGTERM, server.handle_exit)
signal.raise_signal(signal.SIGTERM)
assert server.should_exit
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
asyncio.run(when_database_is_up(lambda t: AsyncMemex.connect(sys.argv[1], open_timeout=t)))
"""


def test_a_stop_before_the_wait_for_the_database_is_not_lost() -> None:
    """A worker stopped after uvicorn took over SIGTERM but before it began to wait for a
    database that is down ends at once (it used to wait for the database for minutes,
    holding up the service's stop)."""
    with socket.socket() as s:  # a port nothing listens on: the database is down
        s.bind(("127.0.0.1", 0))
        dsn = f"postgresql://memex@127.0.0.1:{s.getsockname()[1]}/memex"
    done = subprocess.run(
        [sys.executable, "-c", STOPPED_BEFORE_THE_WAIT, dsn],
        capture_output=True,
        text=True,
        timeout=30,  # without the fix: 5-minute patience for a database that never comes
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "stopped while waiting for the database" in done.stderr, done.stderr[-4000:]
    assert "Traceback" not in done.stderr, done.stderr[-4000:]
